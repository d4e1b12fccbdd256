//! The `report-task` example end to end, on both hosts: the native binary as a child process,
//! and the Worker (built from the same source, deployed by the root `wrangler.toml`) under
//! `wrangler dev` with real Durable Object storage and alarms. The tests talk MCP to it and
//! play its report service with a fake that counts every call.
//!
//! The crash tests kill the host with SIGKILL (for the Worker: wrangler and workerd) while a
//! task sleeps or retries, start it again on the same state directory, and check that the task
//! finishes with every completed step run exactly once. On the Worker, operators' wake-ups
//! run the alarm handler again and again while a task runs, and no step runs twice.

use std::path::Path;
use std::sync::MutexGuard;
use std::time::Duration;

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::report_api::{FakeReportService, GARBLED, SendCall, report_for};
use durable_mcp_tests::server::ServerProcess;
use durable_mcp_tests::wait;
use durable_mcp_tests::workerd::{
    WorkerProcess, build_worker_once, one_worker_at_a_time, workspace_root,
};
use serde_json::{Value, json};

/// The example's binary.
const BINARY: &str = "report-task";
/// The recipient most tests send to.
const ADA: &str = "ada@example.org";

/// The example's Worker crate; the root `wrangler.toml` deploys it.
const WORKER_CRATE: &str = "examples/report-task";
/// The admin token the Worker is started with, for operators' wake-ups.
const INSPECTOR_TOKEN: &str = "test-inspector-token";

// ---- the example on either host ----

/// Where the example runs.
#[derive(Clone, Copy, Debug)]
enum Host {
    /// The native binary, a child process.
    Native,
    /// The Worker under `wrangler dev`.
    Worker,
}

/// The running example.
enum Running {
    Native(ServerProcess),
    /// The Worker, and the guard that keeps other Worker tests waiting meanwhile.
    Worker(WorkerProcess, MutexGuard<'static, ()>),
}

/// A running `report-task` and an MCP client of it that declares the Tasks extension.
struct ReportServer {
    running: Running,
    client: McpClient,
}

impl ReportServer {
    /// Starts the example on `host` with state directory `data_dir`, talking to `service`,
    /// with the cool-off `cool_off` between fetching and sending.
    fn start(host: Host, data_dir: &Path, service: &FakeReportService, cool_off: &str) -> Self {
        let url = service.url();
        let settings = [
            ("REPORT_API_URL", url.as_str()),
            ("REPORT_COOL_OFF", cool_off),
        ];
        let running = match host {
            Host::Native => Running::Native(ServerProcess::start(BINARY, data_dir, &settings)),
            Host::Worker => {
                let guard = one_worker_at_a_time();
                build_worker_once(WORKER_CRATE);
                // A short lease, so an activation cut off by a kill runs again soon.
                let vars = [
                    settings[0],
                    settings[1],
                    ("DURABLE_MCP_LEASE", "3s"),
                    ("DURABLE_MCP_HAND_OFF", "2s"),
                    ("DURABLE_MCP_INSPECTOR_TOKEN", INSPECTOR_TOKEN),
                ];
                let worker = WorkerProcess::start_with_vars(&workspace_root(), data_dir, &vars);
                Running::Worker(worker, guard)
            }
        };
        let url = match &running {
            Running::Native(process) => process.url().to_owned(),
            Running::Worker(worker, _) => worker.mcp_url(),
        };
        ReportServer {
            running,
            client: McpClient::new(&url),
        }
    }

    /// SIGKILL: no shutdown code runs.
    fn kill(self) {
        match self.running {
            Running::Native(process) => process.kill(),
            Running::Worker(worker, _guard) => worker.kill(),
        }
    }

    /// The Worker (wake-ups are the Worker's).
    fn worker(&self) -> &WorkerProcess {
        match &self.running {
            Running::Worker(worker, _) => worker,
            Running::Native(_) => panic!("only the Worker has wake-ups"),
        }
    }
}

/// Runs the task's alarm handler now, through the Worker's admin wake-up.
fn wake(worker: &WorkerProcess, id: &str) {
    let authorization = format!("Bearer {INSPECTOR_TOKEN}");
    let response = worker.post(
        &format!("/__durable-mcp/wake/{id}"),
        &[("Authorization", authorization.as_str())],
    );
    assert_eq!(response.status, 200, "wake {id}: {response:?}");
}

impl ReportServer {
    fn call(&self, tool: &str, arguments: Value) -> Value {
        self.client.result(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
    }

    /// Calls a task tool and returns the `CreateTaskResult`.
    fn create(&self, tool: &str, arguments: Value) -> (String, Value) {
        let created = self.call(tool, arguments);
        assert_eq!(
            created["resultType"], "task",
            "{tool} did not create a task: {created}"
        );
        let id = created["taskId"].as_str().expect("taskId").to_owned();
        (id, created)
    }

    fn get(&self, id: &str) -> Value {
        self.client.result("tasks/get", json!({ "taskId": id }))
    }

    /// Polls `tasks/get` until `ready` holds; fails at once if the task ends otherwise.
    fn wait_for(&self, id: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
        wait::until(
            &format!("task {id}: {what}"),
            || self.get(id),
            |task| {
                if ready(task) {
                    return true;
                }
                let status = task["status"].as_str().unwrap_or_default();
                assert!(
                    !["completed", "failed", "cancelled"].contains(&status),
                    "task {id} ended before {what}: {task}"
                );
                false
            },
        )
    }

    fn wait_for_status(&self, id: &str, status: &str) -> Value {
        self.wait_for(id, &format!("status {status}"), |task| {
            task["status"] == status
        })
    }

    /// Answers the task's elicitation `key` with `response`.
    fn answer(&self, id: &str, key: &str, response: Value) {
        let ack = self.client.result(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": { key: response } }),
        );
        assert_eq!(ack["resultType"], "complete", "{ack}");
    }
}

fn text_of(task: &Value) -> &str {
    task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {task}"))
}

/// Every send carried `<task id>:send` and the fetched report.
fn assert_sends_carry_the_key(sends: &[SendCall], id: &str, to: &str) {
    let key = format!("{id}:send");
    for send in sends {
        assert_eq!(
            send.idempotency_key.as_deref(),
            Some(key.as_str()),
            "{send:?}"
        );
        assert_eq!(send.body, json!({ "to": to, "report": report_for(to) }));
    }
}

/// The task fetched once, then sent once (accepted, with its key) no sooner than `cool_off`
/// after the fetch.
fn assert_fetched_then_sent_once(service: &FakeReportService, id: &str, cool_off: Duration) {
    let fetches = service.fetches(ADA);
    let sends = service.sends(ADA);
    assert_eq!(fetches.len(), 1, "a journaled fetch runs once");
    assert_eq!(sends.len(), 1, "send runs once: {sends:?}");
    assert_eq!(sends[0].status, 200);
    assert_sends_carry_the_key(&sends, id, ADA);
    // The cool-off lies between the two calls (a lower bound; 50 ms for clock rounding). This
    // is the task's own rule, a sleep it must not cut short (across a restart too), not a
    // bound on speed: both instants are the fake's, and load can only lengthen the gap.
    let waited = sends[0].at.duration_since(fetches[0]);
    assert!(
        waited + Duration::from_millis(50) >= cool_off,
        "sent after {waited:?}"
    );
}

// ---- discovery and the plain tool ----

fn the_three_tools_are_listed_with_their_schemas(host: Host) {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "5s");
    let listed = server.client.result("tools/list", json!({}));
    let tools = listed["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, ["send_report", "approve_report", "echo"]);
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["to"]));
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["to"]["type"],
        "string"
    );
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["to"]));
    assert_eq!(tools[2]["inputSchema"]["required"], json!(["m"]));
}

fn echo_answers_with_its_text(host: Host) {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "5s");
    let result = server.call("echo", json!({ "m": "hello, durable world" }));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["content"],
        json!([{ "type": "text", "text": "hello, durable world" }])
    );
    assert!(result.get("isError").is_none(), "{result}");

    // A call without `m` is a tool error naming it, which the model can correct.
    let refused = server.call("echo", json!({}));
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("missing field `m`"), "{text}");
}

// ---- send_report ----

fn send_report_fetches_cools_off_and_sends_once(host: Host) {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let cool_off = Duration::from_secs(1);
    let server = ReportServer::start(host, dir.path(), &service, "1s");

    let (id, created) = server.create("send_report", json!({ "to": ADA }));
    assert_eq!(created["status"], "working");
    let done = server.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), sent_to(ADA));
    assert!(done["result"].get("isError").is_none(), "{done}");
    assert_eq!(done["statusMessage"], sent_to(ADA));

    assert_fetched_then_sent_once(&service, &id, cool_off);
}

fn send_report_retries_a_failing_send_with_one_idempotency_key(host: Host) {
    let service = FakeReportService::start();
    service.fail_next_sends(2);
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "10ms");

    let (id, _) = server.create("send_report", json!({ "to": ADA }));
    let done = server.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), sent_to(ADA));

    let sends = service.sends(ADA);
    let statuses: Vec<u16> = sends.iter().map(|send| send.status).collect();
    assert_eq!(statuses, [503, 503, 200], "three attempts: {sends:?}");
    assert_sends_carry_the_key(&sends, &id, ADA);
    assert_eq!(
        service.fetches(ADA).len(),
        1,
        "the fetch is not re-run by the retries"
    );
}

fn send_report_gives_up_at_once_on_an_answer_that_is_not_a_report(host: Host) {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "10ms");

    let (id, _) = server.create("send_report", json!({ "to": GARBLED }));
    let done = server.wait_for_status(&id, "completed");
    // A tool error the model can read, not a protocol failure of the task.
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = text_of(&done);
    assert!(
        text.contains("\"fetch\"") && text.contains("not a report"),
        "{text}"
    );
    // Not retryable: the service would answer the same again.
    assert_eq!(service.fetches(GARBLED).len(), 1);
    assert!(service.sends(GARBLED).is_empty());
}

fn send_report_refuses_a_call_without_a_recipient(host: Host) {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "10ms");
    for arguments in [json!({}), json!({ "to": "" }), json!({ "to": 42 })] {
        let response = server
            .client
            .send(
                "tools/call",
                json!({ "name": "send_report", "arguments": arguments }),
                true,
            )
            .json();
        // A tool error the model can read, naming the argument; no task is created.
        let result = &response["result"];
        assert_eq!(result["isError"], true, "{arguments}: {response}");
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("to"),
            "{response}"
        );
    }
    // No task was created, so nothing reached the service.
    assert_eq!(service.all_fetches(), 0);
}

// ---- approve_report ----

fn approve_report_sends_only_when_approved(host: Host) {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "5s");
    // One failing send: the approved report goes out on a retry, with the same key.
    service.fail_next_sends(1);

    let (id, _) = server.create("approve_report", json!({ "to": ADA }));
    let waiting = server.wait_for_status(&id, "input_required");
    let request = &waiting["inputRequests"]["approval"];
    assert_eq!(request["method"], "elicitation/create", "{waiting}");
    let title = report_for(ADA)["title"].as_str().unwrap().to_owned();
    assert_eq!(
        request["params"]["message"],
        format!("Send {title:?} to {ADA}?")
    );
    let schema = &request["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["approve"]));
    assert!(
        service.sends(ADA).is_empty(),
        "nothing is sent before approval"
    );

    server.answer(
        &id,
        "approval",
        json!({ "action": "accept", "content": { "approve": true } }),
    );
    let done = server.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), sent_to(ADA));
    assert_eq!(service.fetches(ADA).len(), 1, "one compile");
    let sends = service.sends(ADA);
    assert_eq!(sends.len(), 2, "a failed send and its retry: {sends:?}");
    assert_eq!(sends[1].status, 200);
    assert_sends_carry_the_key(&sends, &id, ADA);
}

fn approve_report_declined_or_refused_is_discarded_unsent(host: Host) {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "5s");
    let answers = [
        json!({ "action": "decline" }),
        json!({ "action": "cancel" }),
        json!({ "action": "accept", "content": { "approve": false } }),
    ];
    for (n, response) in answers.into_iter().enumerate() {
        let to = format!("reader-{n}@example.org");
        let (id, _) = server.create("approve_report", json!({ "to": to }));
        server.wait_for_status(&id, "input_required");
        server.answer(&id, "approval", response.clone());
        let done = server.wait_for_status(&id, "completed");
        let title = report_for(&to)["title"].as_str().unwrap().to_owned();
        assert_eq!(
            text_of(&done),
            format!("report {title:?} discarded"),
            "{response}"
        );
        assert!(
            done["result"].get("isError").is_none(),
            "a completed result: {done}"
        );
        assert_eq!(service.fetches(&to).len(), 1, "{response}");
        assert!(service.sends(&to).is_empty(), "{response}: nothing sent");
    }
}

/// What `send_report` and an approved `approve_report` answer for `to`.
fn sent_to(to: &str) -> String {
    let title = report_for(to)["title"].as_str().unwrap().to_owned();
    format!("report {title:?} sent to {to}")
}

// ---- crash and restart ----

fn a_task_killed_while_it_sleeps_finishes_after_a_restart(host: Host) {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let cool_off = Duration::from_secs(3);
    let server = ReportServer::start(host, dir.path(), &service, "3s");
    let (id, _) = server.create("send_report", json!({ "to": ADA }));
    let sleeping = server.wait_for(&id, "the cool-off", |task| {
        task["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("cooling off"))
    });
    assert_eq!(sleeping["status"], "working");
    assert_eq!(service.fetches(ADA).len(), 1);
    server.kill();
    assert!(service.sends(ADA).is_empty(), "killed before sending");

    let restarted = ReportServer::start(host, dir.path(), &service, "3s");
    let done = restarted.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), sent_to(ADA));
    // The sleep survived the restart: the send still waited out the whole cool-off.
    assert_fetched_then_sent_once(&service, &id, cool_off);
}

fn a_task_killed_while_its_send_retries_finishes_after_a_restart(host: Host) {
    let service = FakeReportService::start();
    service.fail_next_sends(3);
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "10ms");
    let (id, _) = server.create("send_report", json!({ "to": ADA }));
    // Two failed attempts: the step is waiting out its backoff (at least 0.5 s before the
    // third attempt, which fails too, and 1 s more before the fourth).
    wait::until_true("two failed sends", || service.sends(ADA).len() >= 2);
    server.kill();
    let before = service.sends(ADA);
    assert!(
        before.iter().all(|send| send.status == 503),
        "killed before a send went through: {before:?}"
    );

    let restarted = ReportServer::start(host, dir.path(), &service, "10ms");
    let done = restarted.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), sent_to(ADA));
    let sends = service.sends(ADA);
    let statuses: Vec<u16> = sends.iter().map(|send| send.status).collect();
    assert_eq!(
        statuses,
        [503, 503, 503, 200],
        "one successful send: {sends:?}"
    );
    assert_sends_carry_the_key(&sends, &id, ADA);
    assert_eq!(
        service.fetches(ADA).len(),
        1,
        "the journaled fetch is not re-run after the restart"
    );
}

// ---- the Worker's alarm handler, run again and again ----

/// Operators' wake-ups run the alarm handler while the task sleeps, while its send retries and
/// after it finished, from three threads at once and racing the platform's own alarms: no
/// step runs twice, and nothing is lost.
fn the_alarm_handler_run_again_runs_no_step_twice(host: Host) {
    let service = FakeReportService::start();
    service.fail_next_sends(2);
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(host, dir.path(), &service, "1s");
    let (id, _) = server.create("send_report", json!({ "to": ADA }));
    let worker = server.worker();
    let finished = std::sync::atomic::AtomicBool::new(false);
    let done = std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                while !finished.load(std::sync::atomic::Ordering::Relaxed) {
                    wake(worker, &id);
                    // Paces the hammering; what the test awaits is the status below.
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        }
        let done = server.wait_for_status(&id, "completed");
        finished.store(true, std::sync::atomic::Ordering::Relaxed);
        done
    });
    assert_eq!(text_of(&done), sent_to(ADA));
    for _ in 0..3 {
        wake(worker, &id);
    }
    // A wrong token is told how to authenticate, and wakes nothing.
    for authorization in ["Bearer test-admin-tokeN", "Bearer test-admin-token-", ""] {
        let refused = worker.post(
            &format!("/__durable-mcp/wake/{id}"),
            &[("Authorization", authorization)],
        );
        assert_eq!(refused.status, 401, "{authorization:?}: {refused:?}");
        assert!(
            refused
                .header("www-authenticate")
                .is_some_and(|value| value.starts_with("Bearer")),
            "{refused:?}"
        );
    }
    let sends = service.sends(ADA);
    let statuses: Vec<u16> = sends.iter().map(|send| send.status).collect();
    assert_eq!(statuses, [503, 503, 200], "{sends:?}");
    assert_sends_carry_the_key(&sends, &id, ADA);
    assert_eq!(service.fetches(ADA).len(), 1, "the fetch ran once");
    assert_eq!(server.get(&id)["status"], "completed");
}

/// Declares each test once per host: `native::<name>` and `worker::<name>`.
macro_rules! on_hosts {
    ($host:ident: $($name:ident),* $(,)?) => {
        mod $host {
            $(
                #[test]
                fn $name() {
                    super::$name(super::on_hosts!(@host $host));
                }
            )*
        }
    };
    (@host native) => { super::Host::Native };
    (@host worker) => { super::Host::Worker };
}
use on_hosts;

on_hosts!(native: the_three_tools_are_listed_with_their_schemas, echo_answers_with_its_text, send_report_fetches_cools_off_and_sends_once, send_report_retries_a_failing_send_with_one_idempotency_key, send_report_gives_up_at_once_on_an_answer_that_is_not_a_report, send_report_refuses_a_call_without_a_recipient, approve_report_sends_only_when_approved, approve_report_declined_or_refused_is_discarded_unsent, a_task_killed_while_it_sleeps_finishes_after_a_restart, a_task_killed_while_its_send_retries_finishes_after_a_restart);
on_hosts!(worker: the_three_tools_are_listed_with_their_schemas, echo_answers_with_its_text, send_report_fetches_cools_off_and_sends_once, send_report_retries_a_failing_send_with_one_idempotency_key, send_report_gives_up_at_once_on_an_answer_that_is_not_a_report, send_report_refuses_a_call_without_a_recipient, approve_report_sends_only_when_approved, approve_report_declined_or_refused_is_discarded_unsent, a_task_killed_while_it_sleeps_finishes_after_a_restart, a_task_killed_while_its_send_retries_finishes_after_a_restart, the_alarm_handler_run_again_runs_no_step_twice);
