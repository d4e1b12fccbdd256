//! Every example's Worker as `wrangler deploy` ships it: its own `wrangler.toml`, no variable
//! set by the test, reached under `wrangler dev` on the kind of hostname a deployed Worker
//! answers on (`<worker>.<account>.workers.dev`), as the platform passes it in `Host`.
//!
//! Each answers on that name and refuses other hosts and other sites' pages; report-task also
//! completes both of its tasks with the demo report service its `wrangler.toml` selects.

use std::path::{Path, PathBuf};

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::wait;
use durable_mcp_tests::workerd::{
    WorkerProcess, build_worker_once, one_worker_at_a_time, workspace_root,
};
use serde_json::{Value, json};

/// A Worker's deployed hostname, as Cloudflare routes it.
fn deployed_host(worker: &str) -> String {
    format!("{worker}.team.workers.dev")
}

/// A client of the Worker of `crate_dir` started from the `wrangler.toml` in `config_dir`,
/// which sends `Host: <deployed host>` with every request.
struct Deployed {
    _worker: WorkerProcess,
    client: McpClient,
    host: String,
}

impl Deployed {
    fn start(crate_dir: &'static str, config_dir: &Path, name: &str, state: &Path) -> Self {
        build_worker_once(crate_dir);
        let worker = WorkerProcess::start(config_dir, state);
        let client = McpClient::new(&worker.mcp_url());
        Deployed {
            _worker: worker,
            client,
            host: deployed_host(name),
        }
    }

    /// The HTTP status and body of `method`, with `headers` replacing the request's own.
    fn send_with(&self, method: &str, params: Value, headers: &[(&str, &str)]) -> (u16, Value) {
        let (body, mut sent) = self.client.build(method, params, true);
        sent.push(("Host".to_owned(), self.host.clone()));
        for (name, value) in headers {
            sent.retain(|(header, _)| !header.eq_ignore_ascii_case(name));
            sent.push(((*name).to_owned(), (*value).to_owned()));
        }
        let response = self.client.send_built(&body, &sent);
        (response.status, response.json())
    }

    /// The `result` of `method` sent on the deployed hostname.
    fn result(&self, method: &str, params: Value) -> Value {
        let (status, body) = self.send_with(method, params, &[]);
        assert_eq!(status, 200, "{method} on {}: {body}", self.host);
        body["result"].clone()
    }

    /// Checks the hosts and origins a deployed Worker answers.
    fn answers_only_its_own_names(&self) {
        let status = |headers: &[(&str, &str)]| self.send_with("tools/list", json!({}), headers).0;
        assert_eq!(status(&[]), 200, "its workers.dev name");
        let own_page = format!("https://{}", self.host);
        assert_eq!(status(&[("Origin", &own_page)]), 200, "a page it served");
        assert_eq!(status(&[("Host", "evil.example")]), 403, "another host");
        let other_page = [("Origin", "https://evil.team.workers.dev")];
        assert_eq!(status(&other_page), 403, "another Worker's page");
    }

    /// Polls `tasks/get` until the task leaves `working`; returns the task.
    fn settle(&self, id: &str) -> Value {
        wait::until(
            &format!("task {id} to leave `working`"),
            || self.result("tasks/get", json!({ "taskId": id })),
            |task| task["status"] != "working",
        )
    }
}

fn crate_path(relative: &str) -> PathBuf {
    workspace_root().join(relative)
}

fn text_of(task: &Value) -> &str {
    task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn report_task_deployed_completes_its_tasks_with_the_demo_service() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    // The root wrangler.toml deploys report-task.
    let root = workspace_root();
    let worker = Deployed::start("examples/report-task", &root, "report-task", state.path());
    worker.answers_only_its_own_names();

    let to = json!({ "to": "ada@example.org" });
    let created = worker.result(
        "tools/call",
        json!({ "name": "send_report", "arguments": to }),
    );
    let id = created["taskId"].as_str().expect("a task").to_owned();
    let done = worker.settle(&id);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(text_of(&done).contains("sent to ada@example.org"), "{done}");

    let created = worker.result(
        "tools/call",
        json!({ "name": "approve_report", "arguments": to }),
    );
    let id = created["taskId"].as_str().expect("a task").to_owned();
    let asking = worker.settle(&id);
    assert_eq!(asking["status"], "input_required", "{asking}");
    let answer = json!({ "action": "accept", "content": { "approve": true } });
    worker.result(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "approval": answer } }),
    );
    let done = worker.settle(&id);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(text_of(&done).contains("sent to ada@example.org"), "{done}");
}

#[test]
fn every_other_example_deployed_answers_on_its_workers_dev_name() {
    let _one = one_worker_at_a_time();
    for (crate_dir, name) in [
        ("examples/hello", "hello"),
        ("examples/story-demo", "story-demo"),
        ("examples/conformance", "conformance"),
    ] {
        let state = tempfile::tempdir().unwrap();
        let worker = Deployed::start(crate_dir, &crate_path(crate_dir), name, state.path());
        worker.answers_only_its_own_names();
        let tools = worker.result("tools/list", json!({}));
        assert!(
            tools["tools"]
                .as_array()
                .is_some_and(|tools| !tools.is_empty()),
            "{crate_dir}: {tools}"
        );
    }
}
