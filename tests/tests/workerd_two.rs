//! Two MCP servers in one Worker, under workerd (`wrangler dev`), with the test Worker
//! `tests/worker-two`: server A at `/a/mcp` with its tasks in the TaskRunner class `RunnerA`,
//! server B at `/b/mcp` with `RunnerB`. The Worker's servers and the runners' task registries
//! are built once per isolate; each endpoint and each class must get its own, whichever the
//! isolate builds first.

use std::path::Path;

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::{WorkerProcess, build_worker_once, one_worker_at_a_time};
use serde_json::json;

/// The Worker crate.
const WORKER_CRATE: &str = "tests/worker-two";

fn start(state: &Path) -> WorkerProcess {
    let dir = build_worker_once(WORKER_CRATE);
    WorkerProcess::start(&dir, state)
}

/// A client of the endpoint at `path` (`/a/mcp`, `/b/mcp`).
fn client(worker: &WorkerProcess, path: &str) -> McpClient {
    McpClient::new(&format!("{}{path}", worker.url()))
}

/// The names of the endpoint's tools.
fn tool_names(client: &McpClient) -> Vec<String> {
    let listed = client.result("tools/list", json!({}));
    listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {listed}"))
        .iter()
        .map(|tool| tool["name"].as_str().expect("name").to_owned())
        .collect()
}

/// Server `name` (`a` or `b`) at `/<name>/mcp`: lists only its own tool, and its task runs to
/// completion in its own class.
fn check(worker: &WorkerProcess, name: &str) {
    let client = client(worker, &format!("/{name}/mcp"));
    let tool = format!("only_{name}");
    assert_eq!(tool_names(&client), [tool.as_str()], "/{name}/mcp");
    let server = name.to_uppercase();
    assert_eq!(
        client.run_task(&tool),
        format!("server {server} ran {tool}")
    );
}

/// Both servers, `first` then the other, on a fresh Worker (a fresh isolate), and `first`
/// again once the other is built.
fn both_servers_first(first: &str) {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let worker = start(state.path());
    let second = if first == "a" { "b" } else { "a" };
    check(&worker, first);
    check(&worker, second);
    check(&worker, first);
}

#[test]
fn two_runner_classes_in_one_worker_a_first() {
    both_servers_first("a");
}

#[test]
fn two_runner_classes_in_one_worker_b_first() {
    both_servers_first("b");
}

#[test]
fn each_endpoint_answers_its_path_and_its_wake_path_only() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let dir = build_worker_once(WORKER_CRATE);
    let token = "two-servers-token";
    let worker = WorkerProcess::start_with_vars(
        &dir,
        state.path(),
        &[("DURABLE_MCP_INSPECTOR_TOKEN", token)],
    );
    assert_eq!(worker.get("/mcp").status, 404);
    assert_eq!(worker.get("/a/other").status, 404);
    assert_eq!(worker.get("/b/mcp/").status, 404);
    // The wake path sits beside each endpoint's path.
    assert_eq!(worker.post("/a/__durable-mcp/wake/x", &[]).status, 401);
    let bearer = format!("Bearer {token}");
    let woken = worker.post("/b/__durable-mcp/wake/x", &[("Authorization", &bearer)]);
    assert_eq!(woken.status, 200);
    assert_eq!(String::from_utf8_lossy(&woken.body), "woke x");
    assert_eq!(worker.post("/b/x/__durable-mcp/wake/x", &[]).status, 404);
}
