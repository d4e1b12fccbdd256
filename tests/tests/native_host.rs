//! The native host as a process: graceful shutdown, and tasks surviving a restart on the
//! same state directory, and what both do to a listen stream.

use std::time::Duration;

use durable_mcp_tests::children;
use durable_mcp_tests::listen::{End, Listen, reopen_and_finish_errand};
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::server::ServerProcess;
use durable_mcp_tests::wait;
use serde_json::json;

fn create(client: &McpClient, seconds: f64) -> String {
    let created = client.result(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": seconds, "label": "later" } }),
    );
    created["taskId"].as_str().unwrap().to_owned()
}

/// Polls `slow_compute` task `id` until it completes with "computed later"; it must be working
/// until then.
fn completes_computing_later(client: &McpClient, id: &str) {
    let done = wait::until(
        &format!("task {id} to complete"),
        || client.result("tasks/get", json!({ "taskId": id })),
        |task| {
            if task["status"] == "completed" {
                return true;
            }
            assert_eq!(task["status"], "working", "{task}");
            false
        },
    );
    assert_eq!(done["result"]["content"][0]["text"], "computed later");
}

#[test]
fn sigterm_stops_the_host_cleanly_and_a_restart_finishes_the_sleeping_task() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(server.url());
    let id = create(&client, 2.0);
    assert_eq!(
        client.result("tasks/get", json!({ "taskId": id }))["status"],
        "working"
    );

    let status = server.terminate(Duration::from_secs(20));
    assert!(
        status.is_some_and(|status| status.success()),
        "the host did not exit cleanly on SIGTERM: {status:?}"
    );

    let server = ServerProcess::start("conformance-server", dir.path(), &[]);
    // The host says what it serves, and that it resumes the sleeping task.
    let announced = wait_for_log(&server, "serving MCP");
    let line = announced
        .lines()
        .find(|line| line.contains("serving MCP"))
        .unwrap_or_else(|| panic!("no announcement in {announced}"));
    for field in [
        format!("url={}", server.url()),
        "stored_tasks=1".to_owned(),
        "inspector=off (DURABLE_MCP_INSPECTOR_TOKEN is not set)".to_owned(),
    ] {
        assert!(line.contains(&field), "{line:?} lacks {field:?}");
    }
    let client = McpClient::new(server.url());
    completes_computing_later(&client, &id);
}

/// The server's log once it holds `text` (the log is written a moment after the URL).
fn wait_for_log(server: &ServerProcess, text: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let log = server.log();
        if log.contains(text) || std::time::Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_state_directory_holds_one_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start("conformance-server", dir.path(), &[]);
    create(&McpClient::new(server.url()), 60.0);
    assert!(
        dir.path()
            .join(durable_mcp::native::NativeHost::DATABASE_FILE)
            .exists()
    );
    server.kill();
}

#[test]
fn a_second_process_on_the_same_state_directory_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let first = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(first.url());
    let id = create(&client, 60.0);

    let mut second = std::process::Command::new(durable_mcp_tests::server::workspace_binary(
        "conformance-server",
    ))
    .env("PORT", "0")
    .env("DURABLE_MCP_DATA", dir.path())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let exited = wait::within(wait::LIMIT, wait::INTERVAL, || second.try_wait().unwrap());
    let Some(status) = exited else {
        let _ = second.kill();
        let output = second.wait_with_output().unwrap();
        panic!(
            "a second host started on the same state directory: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    };
    let output = second.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains(&dir.path().display().to_string()),
        "the error names the directory: {stderr}"
    );
    assert!(
        stderr.contains("another process"),
        "the error says why: {stderr}"
    );

    // The first host is untouched and goes on serving its task.
    assert_eq!(
        client.result("tasks/get", json!({ "taskId": id }))["status"],
        "working"
    );
    // Once it is gone, the directory is free again.
    first.kill();
    let third = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(third.url());
    assert_eq!(
        client.result("tasks/get", json!({ "taskId": id }))["status"],
        "working"
    );
}

/// An optional task called without the Tasks extension is followed inline only up to the
/// inline deadline: then the client is told the task goes on, under which id, and which
/// extension to declare; the task finishes durably.
#[test]
fn an_inline_run_past_its_deadline_answers_and_the_task_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let deadline = [("DURABLE_MCP_INLINE_DEADLINE", "300ms")];
    let server = ServerProcess::start("conformance-server", dir.path(), &deadline);
    let client = McpClient::new(server.url());
    let arguments = json!({ "seconds": 2, "label": "later" });
    let response = client.send(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": arguments }),
        false,
    );
    // The answer came before the run ended, however long it took: a run that ended within the
    // inline deadline answers its result, never -32021.
    let body = response.json();
    assert_eq!(body["error"]["code"], -32021, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("io.modelcontextprotocol/tasks"),
        "{message}"
    );
    assert!(message.contains("still running"), "{message}");
    let id = body["error"]["data"]["taskId"]
        .as_str()
        .expect("the task's id");

    completes_computing_later(&client, id);
}

/// A client without the Tasks extension answers a task's question on a later call; the task
/// lives in the store between the two calls, so a host killed in between loses nothing and the
/// retried call, on the restarted host, finishes it.
#[test]
fn an_input_round_survives_a_killed_host() {
    let dir = tempfile::tempdir().unwrap();
    let first = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(first.url());
    let call =
        |client: &McpClient, params| client.call_without_tasks(params).json()["result"].clone();
    let question = json!({ "name": "confirm_delete", "arguments": { "filename": "k.txt" } });
    let round = call(&client, question.clone());
    assert_eq!(round["resultType"], "input_required", "{round}");
    let state = round["requestState"].clone();
    first.kill();

    let second = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(second.url());
    let mut answer = question;
    answer["inputResponses"] =
        json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
    answer["requestState"] = state;
    let done = call(&client, answer);
    assert_eq!(done["content"][0]["text"], "deleted=true", "{done}");
}

/// Rows in the host's task table, read from its SQLite file.
fn stored_tasks(dir: &std::path::Path) -> i64 {
    let path = dir.join(durable_mcp::native::NativeHost::DATABASE_FILE);
    let connection = rusqlite::Connection::open(path).unwrap();
    connection
        .query_row("SELECT count(*) FROM task", [], |row| row.get(0))
        .unwrap()
}

/// With one activation slot held by a long run and two due tasks waiting, a third new task is
/// refused with HTTP 503, `Retry-After` and a JSON-RPC error, and nothing is stored for it;
/// the tasks it was refused for finish, and the same call succeeds once they have.
#[test]
fn creation_beyond_the_waiting_bound_is_refused_with_503_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [
        ("DURABLE_MCP_WORKERS", "1"),
        ("DURABLE_MCP_MAX_ACTIVATIONS", "1"),
        ("DURABLE_MCP_MAX_WAITING", "2"),
    ];
    let server = ServerProcess::start("conformance-server", dir.path(), &settings);
    let client = McpClient::new(server.url());
    // Holds the only slot: no-op steps back to back, never suspending, for far longer than the
    // test runs (it is cancelled below). It yields between batches of steps, so the calls
    // below are answered meanwhile.
    let long = client.result(
        "tools/call",
        json!({ "name": "many_steps", "arguments": { "count": 10_000_000 } }),
    );
    let long = long["taskId"].as_str().unwrap().to_owned();
    let waiting: Vec<String> = (0..2).map(|_| create(&client, 0.0)).collect();

    let refused = client.send(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 0, "label": "later" } }),
        true,
    );
    assert_eq!(
        refused.status,
        503,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert_eq!(refused.header("retry-after"), Some("1"));
    let error = &refused.json()["error"];
    assert!(
        error["message"].as_str().unwrap().contains("busy"),
        "{error}"
    );
    assert_eq!(error["data"]["retryAfter"], 1);
    assert_eq!(
        stored_tasks(dir.path()),
        3,
        "the refused call stored nothing"
    );

    // The cancel stops the long task at its next step, which frees the slot for the waiting
    // tasks: how long the steps would take on a loaded machine does not matter.
    client.result("tasks/cancel", json!({ "taskId": long }));
    for id in &waiting {
        completes_computing_later(&client, id);
    }
    let task = client.result("tasks/get", json!({ "taskId": long }));
    assert_eq!(task["status"], "cancelled", "{task}");
    completes_computing_later(&client, &create(&client, 0.0));
}

/// A `gallery` on the native host (one worker thread per core): its `thumbnail` children are
/// tasks a client sees, created and run at the workers that own their ids; a kill while they
/// run loses nothing, and when they end they wake the parent, which completes with their
/// outputs.
#[test]
fn child_tasks_run_at_their_owners_and_wake_their_parent_across_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let first = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(first.url());
    let gallery = children::start_gallery(&client, &[320, 640, 1280], 2);
    first.kill();

    let second = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(second.url());
    let done = children::wait_for_status(&client, &gallery.parent, "completed");
    assert_eq!(children::result_text(&done), "total 2240", "{done}");
    for child in &gallery.children {
        let task = client.result("tasks/get", json!({ "taskId": child }));
        assert_eq!(task["status"], "completed", "{task}");
    }
    assert_eq!(stored_tasks(dir.path()), 4, "each child was created once");
}

/// Cancelling a parent cancels the children it waits for before it shows `cancelled`.
#[test]
fn cancelling_a_parent_cancels_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(server.url());
    children::cancelling_the_parent_cancels_the_children(&client);
}

/// With `DURABLE_MCP_LOG_FORMAT=json`, the host's log is one JSON object per line, filtered by
/// `RUST_LOG`: a cancelled `trip` whose release keeps failing shows the cancel, each retried
/// attempt of the compensation with its error, and the activation that settled the task, all
/// under the task's id and tool.
#[test]
fn the_host_logs_task_events_as_json_lines_filtered_by_rust_log() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("RUST_LOG", "warn,durable_mcp=debug"),
        ("DURABLE_MCP_LOG_FORMAT", "json"),
    ];
    let server = ServerProcess::start("conformance-server", dir.path(), &env);
    let client = McpClient::new(server.url());
    let created = client.result(
        "tools/call",
        json!({ "name": "trip", "arguments": { "broken_release": true } }),
    );
    let id = created["taskId"].as_str().unwrap().to_owned();
    let get = || client.result("tasks/get", json!({ "taskId": id }));
    wait::until("the trip to be booked", get, |task| {
        task["statusMessage"] == "booked"
    });
    client.result("tasks/cancel", json!({ "taskId": id }));
    wait::until("the trip to be cancelled", get, |task| {
        task["status"] == "cancelled"
    });
    // The activation that settled the task logs its end after storing the status: wait for
    // that line too before reading the log.
    let log = wait::until_some("the log to show the trip cancelled", || {
        let log = server.log();
        let settled = log
            .lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find(|line| line["task_id"] == id)
            .is_some_and(|last| last["status"] == "cancelled");
        settled.then_some(log)
    });
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let of_task: Vec<&serde_json::Value> =
        lines.iter().filter(|line| line["task_id"] == id).collect();
    for line in &of_task {
        assert_eq!(line["tool"], "trip", "{line}");
        let target = line["target"].as_str().unwrap_or_default();
        assert!(
            ["durable_mcp", "conformance_server::durable"].contains(&target),
            "{line}"
        );
    }
    let has = |message: &str| of_task.iter().any(|line| line["message"] == message);
    for message in [
        "task created",
        "activation started",
        "step attempt started",
        "step completed",
        "cancel requested",
        "activation ended",
    ] {
        assert!(has(message), "no {message:?} in the log:\n{log}");
    }
    let retries: Vec<&&serde_json::Value> = of_task
        .iter()
        .filter(|line| line["message"] == "step attempt failed; retry scheduled")
        .collect();
    assert!(retries.len() >= 2, "the release is retried:\n{log}");
    for retry in retries {
        assert_eq!(retry["level"], "WARN");
        assert_eq!(retry["step"], "$cleanup:release");
        assert_eq!(retry["error"], "the hotel does not answer");
    }
    // The application's own event inside the compensation carries the task's id and tool at
    // the top level too, not only in its spans.
    let own = of_task
        .iter()
        .find(|line| line["message"] == "releasing the room")
        .unwrap_or_else(|| panic!("no event of the application under the task's id:\n{log}"));
    assert_eq!(own["target"], "conformance_server::durable", "{own}");
    assert_eq!(own["booking"], "room-7", "{own}");
    // Settled by the activation that ran out of compensations to try, or by the deadline.
    let last = of_task.last().unwrap();
    assert_eq!(last["status"], "cancelled", "{log}");
    // RUST_LOG=warn keeps the other crates' info events out.
    assert!(
        lines
            .iter()
            .all(|line| line["target"] == "durable_mcp" || line["level"] != "INFO"),
        "{log}"
    );
}

/// A listen stream ends when its host is killed, without a `complete` response; the client
/// opens it again on the restarted host and reads the task as it is then, then what follows.
#[test]
fn a_listen_stream_dropped_by_a_killed_host_reads_the_current_state_when_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let first = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(first.url());
    let id = client.create_task("watched_errand", json!({ "seconds": 0 }));
    let mut listen = Listen::open(&client, json!({ "taskIds": [id] }), &[]);
    assert_eq!(
        listen.next_message().unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    listen.tasks_until("input_required");

    first.kill();
    assert_eq!(listen.end(), (Vec::new(), End::Dropped));

    let second = ServerProcess::start("conformance-server", dir.path(), &[]);
    reopen_and_finish_errand(&McpClient::new(second.url()), &id);
}

/// A host that stops (SIGTERM) ends its listen streams with their `complete` response.
#[test]
fn a_stopping_host_ends_its_listen_streams_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start("conformance-server", dir.path(), &[]);
    let client = McpClient::new(server.url());
    let mut listen = Listen::open(&client, json!({ "toolsListChanged": true }), &[]);
    listen.next_message().expect("an acknowledgement");
    let stopping = std::thread::spawn(move || server.terminate(Duration::from_secs(30)));
    let (before, end) = listen.end();
    assert!(before.is_empty(), "{before:?}");
    let End::Complete(response) = end else {
        panic!("the stream was dropped, not ended");
    };
    assert_eq!(response["result"]["resultType"], "complete");
    let status = stopping.join().unwrap().expect("the host stopped");
    assert!(status.success(), "{status:?}");
}

/// The host holds at most `DURABLE_MCP_MAX_STREAMS` listen streams: one more is refused with
/// 503, `Retry-After` and a message saying the bound, and a closed stream frees its place.
#[test]
fn listen_streams_past_the_bound_are_refused_until_one_closes() {
    let dir = tempfile::tempdir().unwrap();
    let bound = [("DURABLE_MCP_MAX_STREAMS", "2")];
    let server = ServerProcess::start("conformance-server", dir.path(), &bound);
    let client = McpClient::new(server.url());
    let filter = json!({ "notifications": { "toolsListChanged": true } });
    let mut first = Listen::open(&client, filter["notifications"].clone(), &[]);
    let mut second = Listen::open(&client, filter["notifications"].clone(), &[]);
    for open in [&mut first, &mut second] {
        open.next_message().expect("an acknowledgement");
    }
    let refused = client.send("subscriptions/listen", filter.clone(), true);
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("5"));
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("limit of 2 open"), "{message}");

    drop(first);
    let opens = || {
        let (body, headers) = client.build("subscriptions/listen", filter.clone(), true);
        let headers = durable_mcp_tests::http::borrowed(&headers);
        // The head is enough: a stream that opens answers 200 at once.
        (client.raw_streaming("POST", &headers, body.to_string().as_bytes())).status == 200
    };
    wait::until_true("a closed stream to free its place", opens);
}
