//! The `report-task` example end to end: the built binary runs as a child process, the tests
//! talk MCP to it and play its report service with a fake that counts every call.
//!
//! The crash tests kill the child with SIGKILL while a task sleeps or retries, start a new
//! child on the same state directory, and check that the task finishes with every completed
//! step run exactly once.

use std::path::Path;
use std::time::{Duration, Instant};

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::report_api::{FakeReportService, GARBLED, SendCall, report_for};
use durable_mcp_tests::server::ServerProcess;
use serde_json::{Value, json};

/// The example's binary.
const BINARY: &str = "report-task";
/// The longest any test waits for something to happen (only against hanging).
const TIMEOUT: Duration = Duration::from_secs(30);
/// The recipient most tests send to.
const ADA: &str = "ada@example.org";

// ---- the example as a child process ----

/// A running `report-task` and an MCP client of it that declares the Tasks extension.
struct ReportServer {
    process: ServerProcess,
    client: McpClient,
}

impl ReportServer {
    /// Starts the example on state directory `data_dir`, talking to `service`, with the
    /// cool-off `cool_off` between fetching and sending.
    fn start(data_dir: &Path, service: &FakeReportService, cool_off: &str) -> Self {
        let url = service.url();
        let env = [
            ("REPORT_API_URL", url.as_str()),
            ("REPORT_COOL_OFF", cool_off),
        ];
        let process = ServerProcess::start(BINARY, data_dir, &env);
        let client = McpClient::new(process.url());
        ReportServer { process, client }
    }

    /// SIGKILL: no shutdown code runs.
    fn kill(self) {
        self.process.kill();
    }

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
        eventually(what, || {
            let task = self.get(id);
            if ready(&task) {
                return Some(task);
            }
            let status = task["status"].as_str().unwrap_or_default();
            assert!(
                !["completed", "failed", "cancelled"].contains(&status),
                "task {id} ended before {what}: {task}"
            );
            None
        })
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

/// Polls `probe` until it yields a value; panics after [`TIMEOUT`] naming `what`.
fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
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
    // The cool-off lies between the two calls (a lower bound; 50 ms for clock rounding).
    let waited = sends[0].at.duration_since(fetches[0]);
    assert!(
        waited + Duration::from_millis(50) >= cool_off,
        "sent after {waited:?}"
    );
}

// ---- discovery and the plain tool ----

#[test]
fn the_three_tools_are_listed_with_their_schemas() {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(dir.path(), &service, "5s");
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
    assert_eq!(tools[2]["inputSchema"]["required"], json!(["text"]));
}

#[test]
fn echo_answers_with_its_text() {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(dir.path(), &service, "5s");
    let result = server.call("echo", json!({ "text": "hello, durable world" }));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["content"],
        json!([{ "type": "text", "text": "hello, durable world" }])
    );
    assert!(result.get("isError").is_none(), "{result}");

    let refused = server
        .client
        .send(
            "tools/call",
            json!({ "name": "echo", "arguments": {} }),
            true,
        )
        .json();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

// ---- send_report ----

#[test]
fn send_report_fetches_cools_off_and_sends_once() {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let cool_off = Duration::from_secs(1);
    let server = ReportServer::start(dir.path(), &service, "1s");

    let (id, created) = server.create("send_report", json!({ "to": ADA }));
    assert_eq!(created["status"], "working");
    let done = server.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), format!("report sent to {ADA}"));
    assert!(done["result"].get("isError").is_none(), "{done}");
    assert_eq!(done["statusMessage"], format!("report sent to {ADA}"));

    assert_fetched_then_sent_once(&service, &id, cool_off);
}

#[test]
fn send_report_retries_a_failing_send_with_one_idempotency_key() {
    let service = FakeReportService::start();
    service.fail_next_sends(2);
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(dir.path(), &service, "10ms");

    let (id, _) = server.create("send_report", json!({ "to": ADA }));
    let done = server.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), format!("report sent to {ADA}"));

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

#[test]
fn send_report_gives_up_at_once_on_an_answer_that_is_not_a_report() {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(dir.path(), &service, "10ms");

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

#[test]
fn send_report_refuses_a_call_without_a_recipient() {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(dir.path(), &service, "10ms");
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

#[test]
fn approve_report_reads_an_accepted_answer_and_its_note() {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(dir.path(), &service, "5s");

    let (id, _) = server.create("approve_report", json!({ "report": "the Q3 numbers" }));
    let waiting = server.wait_for_status(&id, "input_required");
    let request = &waiting["inputRequests"]["approval"];
    assert_eq!(request["method"], "elicitation/create", "{waiting}");
    assert_eq!(request["params"]["message"], "Approve the Q3 numbers?");
    let schema = &request["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    assert_eq!(schema["properties"]["note"]["type"], "string");

    let content = json!({ "approve": true, "note": "ship it" });
    server.answer(
        &id,
        "approval",
        json!({ "action": "accept", "content": content }),
    );
    let done = server.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), "approved: ship it");
    assert!(done["result"].get("isError").is_none(), "{done}");
}

#[test]
fn approve_report_declined_or_refused_is_not_approved() {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(dir.path(), &service, "5s");
    let answers = [
        json!({ "action": "decline" }),
        json!({ "action": "cancel" }),
        json!({ "action": "accept", "content": { "approve": false, "note": "not yet" } }),
    ];
    for response in answers {
        let (id, _) = server.create("approve_report", json!({}));
        server.wait_for_status(&id, "input_required");
        server.answer(&id, "approval", response.clone());
        let done = server.wait_for_status(&id, "completed");
        assert_eq!(text_of(&done), "not approved", "{response}");
        assert!(
            done["result"].get("isError").is_none(),
            "a completed result: {done}"
        );
    }
}

// ---- crash and restart ----

#[test]
fn a_task_killed_while_it_sleeps_finishes_after_a_restart() {
    let service = FakeReportService::start();
    let dir = tempfile::tempdir().unwrap();
    let cool_off = Duration::from_secs(3);
    let server = ReportServer::start(dir.path(), &service, "3s");
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

    let restarted = ReportServer::start(dir.path(), &service, "3s");
    let done = restarted.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), format!("report sent to {ADA}"));
    // The sleep survived the restart: the send still waited out the whole cool-off.
    assert_fetched_then_sent_once(&service, &id, cool_off);
}

#[test]
fn a_task_killed_while_its_send_retries_finishes_after_a_restart() {
    let service = FakeReportService::start();
    service.fail_next_sends(3);
    let dir = tempfile::tempdir().unwrap();
    let server = ReportServer::start(dir.path(), &service, "10ms");
    let (id, _) = server.create("send_report", json!({ "to": ADA }));
    // Two failed attempts: the step is waiting out its backoff (at least 0.5 s before the
    // third attempt, which fails too, and 1 s more before the fourth).
    eventually("two failed sends", || {
        (service.sends(ADA).len() >= 2).then_some(())
    });
    server.kill();
    let before = service.sends(ADA);
    assert!(
        before.iter().all(|send| send.status == 503),
        "killed before a send went through: {before:?}"
    );

    let restarted = ReportServer::start(dir.path(), &service, "10ms");
    let done = restarted.wait_for_status(&id, "completed");
    assert_eq!(text_of(&done), format!("report sent to {ADA}"));
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
