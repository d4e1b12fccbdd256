//! What only the Cloudflare host does, under workerd (`wrangler dev`) with the conformance
//! fixtures' Worker (`examples/conformance`): a long run handed off to fresh alarm invocations,
//! Durable Objects that keep no storage for tasks that do not exist or were purged, a deploy of
//! changed code under a task in flight (patch gates), compensations after a cancel, run and
//! retried by the object's alarm, and child tasks in objects of their own that wake their
//! parent's.
//!
//! It also checks that the root `wrangler.toml` (which deploys `examples/report-task`) passes
//! `wrangler deploy --dry-run`.
//!
//! The behaviour both hosts share (the black-box suite, the conformance scenarios) runs against
//! this Worker from `cargo xtask clients`.

use std::path::Path;
use std::time::Duration;

use durable_mcp_tests::children;
use durable_mcp_tests::inspector::{Inspector, operator_round};
use durable_mcp_tests::listen::{End, Listen, reopen_and_finish_errand};
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::wait;
use durable_mcp_tests::workerd::{
    WorkerProcess, build_worker_once, one_worker_at_a_time, workspace_root, wrangler,
};
use serde_json::{Value, json};

/// The Worker crate.
const WORKER_CRATE: &str = "examples/conformance";

/// Starts the fixtures' Worker with state in `state` and `vars`; returns it and a client.
fn start(state: &Path, vars: &[(&str, &str)]) -> (WorkerProcess, McpClient) {
    let dir = build_worker_once(WORKER_CRATE);
    let worker = WorkerProcess::start_with_vars(&dir, state, vars);
    let client = McpClient::new(&worker.mcp_url());
    (worker, client)
}

fn create(client: &McpClient, tool: &str, arguments: Value) -> String {
    client.create_task(tool, arguments)
}

/// Polls until `ready` says the `tasks/get` answer (a result or an error response) is what
/// is awaited; 60 s at most.
fn wait_until(client: &McpClient, id: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let read = || {
        client
            .send("tasks/get", json!({ "taskId": id }), true)
            .json()
    };
    wait::until(&format!("task {id}"), read, ready)
}

fn completed(response: &Value) -> bool {
    response["result"]["status"] == "completed"
}

/// The text of a completed task's result.
fn result_text(done: &Value) -> String {
    done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {done}"))
        .to_owned()
}

#[test]
fn a_long_run_hands_off_to_fresh_alarm_invocations_and_finishes() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (_worker, client) = start(state.path(), &[("DURABLE_MCP_HAND_OFF", "50ms")]);
    let id = create(&client, "many_steps", json!({ "count": 10000 }));
    let text = result_text(&wait_until(&client, &id, completed));
    let activations: u32 = text
        .strip_prefix("ran 10000 steps in ")
        .and_then(|rest| rest.strip_suffix(" activations"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected answer {text:?}"));
    assert!(
        activations >= 2,
        "10,000 steps under a 50 ms hand-off ran in one activation: {text}"
    );
}

#[test]
fn an_activation_cut_off_by_a_crash_runs_again_at_once_not_at_its_lease() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    // The default lease (15 minutes) and hand-off (10 minutes): only recovery can finish the
    // task within the wait below.
    let (worker, client) = start(state.path(), &[]);
    let id = create(&client, "many_steps", json!({ "count": 100_000 }));
    let running = wait_until(&client, &id, |response| {
        response["result"]["statusMessage"]
            .as_str()
            .is_some_and(|message| message.ends_with("steps done"))
    });
    assert_eq!(running["result"]["status"], "working", "{running}");
    worker.kill();

    let (_worker, client) = start(state.path(), &[]);
    let text = result_text(&wait_until(&client, &id, completed));
    assert!(text.starts_with("ran 100000 steps"), "{text}");
}

/// A client without the Tasks extension answers a task's question on a later call: between
/// the two calls the task lives in its object, so a killed runtime loses nothing and the
/// retried call, on the restarted Worker, finishes it.
#[test]
fn an_input_round_survives_a_killed_runtime() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (worker, client) = start(state.path(), &[]);
    let question = json!({ "name": "ask_twice", "arguments": {} });
    let round = client.call_without_tasks(question.clone()).json()["result"].clone();
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert!(round["inputRequests"]["name"].is_object(), "{round}");
    worker.kill();

    let (_worker, client) = start(state.path(), &[]);
    let mut answer = question;
    answer["inputResponses"] =
        json!({ "name": { "action": "accept", "content": { "name": "Ada" } } });
    answer["requestState"] = round["requestState"].clone();
    let round = client.call_without_tasks(answer.clone()).json()["result"].clone();
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert_eq!(
        round["inputRequests"]["colour"]["params"]["message"],
        "Your favourite colour, Ada?"
    );
    answer["inputResponses"] =
        json!({ "colour": { "action": "accept", "content": { "colour": "green" } } });
    answer["requestState"] = round["requestState"].clone();
    let done = client.call_without_tasks(answer).json()["result"].clone();
    assert_eq!(
        done["content"][0]["text"], "name=Ada colour=green",
        "{done}"
    );
}

/// A task's changes reach a listen stream held by the Worker from the task's object, and a
/// stream dropped by a killed runtime, opened again on the restarted one, reads the task as it
/// is then and what follows. (The black-box suite checks the rest of listen on this host.)
#[test]
fn a_listen_stream_follows_a_task_across_a_killed_runtime() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (worker, client) = start(state.path(), &[]);
    let id = create(&client, "watched_errand", json!({ "seconds": 1 }));
    let mut listen = Listen::open(&client, json!({ "taskIds": [id] }), &[]);
    let ack = listen.next_message().expect("an acknowledgement");
    assert_eq!(ack["params"]["notifications"], json!({ "taskIds": [id] }));
    let seen = listen.tasks_until("input_required");
    assert_eq!(seen.first().unwrap()["status"], "working", "{seen:?}");

    worker.kill();
    assert_eq!(listen.end(), (Vec::new(), End::Dropped));

    let (_worker, client) = start(state.path(), &[]);
    reopen_and_finish_errand(&client, &id);
}

/// A read-only connection to an object's database, which waits out the runtime's writes
/// (tests read it while the Worker runs).
fn open_object(path: &Path) -> rusqlite::Connection {
    let connection =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    connection
        .busy_timeout(Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("set the busy timeout of {}: {e}", path.display()));
    connection
}

/// The ids of the Durable Object databases in a `wrangler dev` state directory that hold the
/// task table: the objects that store a task.
fn objects_with_task_rows(state: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let objects = state.join("v3/do");
    let Ok(namespaces) = std::fs::read_dir(&objects) else {
        return found;
    };
    for namespace in namespaces.flatten() {
        for file in std::fs::read_dir(namespace.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = file.path();
            let is_object = path.extension().is_some_and(|e| e == "sqlite")
                && path.file_stem().is_some_and(|stem| stem != "metadata");
            if !is_object {
                continue;
            }
            let connection = open_object(&path);
            let tables: i64 = connection
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'task'",
                    [],
                    |row| row.get(0),
                )
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            if tables > 0 {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[test]
fn unknown_ids_write_nothing_and_a_purged_task_leaves_no_storage() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (_worker, client) = start(state.path(), &[]);

    // Every task method on ids that were never created: refused, and nothing stored.
    for (n, method) in ["tasks/get", "tasks/update", "tasks/cancel"]
        .iter()
        .enumerate()
    {
        let id = format!("never-created-{n}");
        let params = if *method == "tasks/update" {
            json!({ "taskId": id, "inputResponses": {} })
        } else {
            json!({ "taskId": id })
        };
        let response = client.send(method, params, true).json();
        assert_eq!(response["error"]["code"], -32602, "{method}: {response}");
    }
    assert_eq!(objects_with_task_rows(state.path()), Vec::<String>::new());

    // A task kept for 2 s: its object stores it, then leaves nothing once it is purged.
    let id = create(&client, "short_lived_job", json!({}));
    wait_until(&client, &id, completed);
    assert_eq!(
        objects_with_task_rows(state.path()).len(),
        1,
        "the task's object holds its rows while it is kept"
    );
    wait_until(&client, &id, |response| response["error"]["code"] == -32602);
    wait::until(
        "the purged task's object to drop its tables",
        || Value::from(objects_with_task_rows(state.path())),
        |objects| objects.as_array().is_some_and(Vec::is_empty),
    );
}

#[test]
fn the_root_wrangler_toml_deploys_report_task_in_a_dry_run() {
    build_worker_once("examples/report-task");
    let out = tempfile::tempdir().unwrap();
    let output = wrangler(&workspace_root())
        .args(["deploy", "--dry-run", "--outdir"])
        .arg(out.path())
        .output()
        .expect("run wrangler deploy --dry-run");
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "wrangler deploy --dry-run failed: {printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for binding in ["env.TASK_RUNNER (TaskRunner)", "env.TASK_INDEX (TaskIndex)"] {
        assert!(printed.contains(binding), "{binding}: {printed}");
    }
    let bundled: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        bundled.iter().any(|name| name.ends_with(".wasm"))
            && bundled.iter().any(|name| name == "index.js"),
        "{bundled:?}"
    );
}

#[test]
fn the_allowed_hosts_variable_opens_the_endpoint_to_the_workers_own_hosts() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let vars = [
        (
            "DURABLE_MCP_ALLOWED_HOSTS",
            "mcp.example.test, tasks.example.test",
        ),
        ("DURABLE_MCP_CORS_ORIGINS", "http://pages.example.test:5173"),
    ];
    let (_worker, client) = start(state.path(), &vars);
    let (body, headers) = client.build("tools/list", json!({}), false);
    let status_with = |name: &str, value: &str| {
        let mut headers: Vec<(String, String)> = headers
            .iter()
            .filter(|(header, _)| !header.eq_ignore_ascii_case(name))
            .cloned()
            .collect();
        headers.push((name.to_owned(), value.to_owned()));
        client.send_built(&body, &headers).status
    };
    assert_eq!(status_with("Host", "mcp.example.test"), 200);
    assert_eq!(status_with("Host", "tasks.example.test:443"), 200);
    assert_eq!(status_with("Origin", "https://mcp.example.test"), 200);
    assert_eq!(status_with("Host", "evil.example"), 403);
    assert_eq!(status_with("Origin", "https://evil.example"), 403);

    // A page on the CORS origin passes its preflight and may read the answers.
    let page = "http://pages.example.test:5173";
    assert_eq!(status_with("Origin", page), 200);
    let preflight = client.raw(
        "OPTIONS",
        &[
            ("Origin", page),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "content-type, mcp-protocol-version",
            ),
        ],
        b"",
    );
    assert_eq!(preflight.status, 204, "{preflight:?}");
    assert_eq!(preflight.header("access-control-allow-origin"), Some(page));
}

/// A setting that is set but unusable stops the Worker as it stops the native host: each of
/// the endpoint's paths answers 500 naming the setting and the fix, and nothing is served with
/// a default the operator did not choose; paths that are not the endpoint's stay 404.
#[test]
fn an_unusable_setting_refuses_every_request_to_the_endpoint() {
    let _one = one_worker_at_a_time();
    for (name, value, fix) in [
        ("DURABLE_MCP_LEASE", "soon", "such as 90s"),
        ("DURABLE_MCP_INSPECTOR_TOKEN", "short", "openssl rand"),
        ("RUST_LOG", "info,=", "per-target levels"),
        (
            "DURABLE_MCP_LOG_FORMAT",
            "compact",
            "use `object` (the default) or `json`",
        ),
        (
            "DURABLE_MCP_OAUTH_ISSUER",
            "https://issuer.example.test",
            "DURABLE_MCP_OAUTH_RESOURCE",
        ),
    ] {
        let state = tempfile::tempdir().unwrap();
        let dir = build_worker_once(WORKER_CRATE);
        let worker = WorkerProcess::start_with_vars(&dir, state.path(), &[(name, value)]);
        let client = McpClient::new(&worker.mcp_url());
        let (body, headers) = client.build("tools/list", json!({}), false);
        for refused in [
            client.send_built(&body, &headers),
            worker.get("/__durable-mcp/inspector"),
            worker.post("/__durable-mcp/wake/some-task", &[]),
        ] {
            let text = String::from_utf8_lossy(&refused.body).into_owned();
            assert_eq!(refused.status, 500, "{name}={value}: {text}");
            assert!(
                text.contains(name) && text.contains(fix),
                "{name}={value}: {text}"
            );
        }
        assert_eq!(worker.get("/elsewhere").status, 404, "{name}={value}");
    }
}

/// A 5 MB body is refused with 413, whether it declares its length (refused on the header
/// before the Worker reads a byte) or comes in chunks without one (read only up to the 4 MiB
/// limit). wrangler's local proxy receives each body whole before the Worker sees the request,
/// so a client here must send it all either way; on Cloudflare the body streams to the Worker.
#[test]
fn a_body_over_the_limit_is_refused_with_or_without_its_length() {
    use std::io::{Read, Write};

    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (_worker, client) = start(state.path(), &[]);
    let size = 5_000_000;
    let body = format!("{{{}", " ".repeat(size - 1));
    let chunked: String = body
        .as_bytes()
        .chunks(64 * 1024)
        .map(|chunk| {
            format!(
                "{:x}\r\n{}\r\n",
                chunk.len(),
                String::from_utf8_lossy(chunk)
            )
        })
        .chain(["0\r\n\r\n".to_owned()])
        .collect();
    let address = client.address();
    let requests = [
        format!("Content-Length: {size}\r\n\r\n{body}"),
        format!("Transfer-Encoding: chunked\r\n\r\n{chunked}"),
    ];
    for framing in requests {
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let head =
            format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        // The server may answer and close before the whole body is written.
        let _ = stream.write_all(framing.as_bytes());
        let mut status_line = [0u8; 12];
        stream.read_exact(&mut status_line).expect("an answer");
        let framing = &framing[..framing.find('\r').unwrap()];
        assert_eq!(&status_line, b"HTTP/1.1 413", "{framing}");
    }
}

/// An optional task called without the Tasks extension is followed inline only up to the
/// deadline the Worker's variable sets; then the client learns the task's id and the
/// extension to declare, and the task finishes durably in its object.
#[test]
fn an_inline_run_past_its_deadline_answers_and_the_task_goes_on() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (_worker, client) = start(state.path(), &[("DURABLE_MCP_INLINE_DEADLINE", "300ms")]);
    let arguments = json!({ "seconds": 2, "label": "later" });
    let response = client.send(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": arguments }),
        false,
    );
    let body = response.json();
    assert_eq!(body["error"]["code"], -32021, "{body}");
    let id = body["error"]["data"]["taskId"]
        .as_str()
        .expect("the task's id")
        .to_owned();
    let done = wait_until(&client, &id, completed);
    assert_eq!(
        done["result"]["result"]["content"][0]["text"],
        "computed later"
    );
}

/// A deploy while a task waits: the task created on the first code keeps the path it took
/// (past the `tax` gate, before the `receipt` gate), a task created on the new code takes every
/// new path, and `tasks/get` shows the code version each was created under.
#[test]
fn a_deploy_with_patch_gates_keeps_a_task_in_flight_on_its_path() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (worker, client) = start(state.path(), &[("FIXTURE_CODE", "v1")]);
    let old = create(&client, "order", json!({ "seconds": 20 }));
    // Reserved, and recorded its sleep: past the `tax` gate the new code adds.
    let waiting = wait_until(&client, &old, |response| {
        response["result"]["statusMessage"] == "waiting"
    });
    assert_eq!(
        waiting["result"]["_meta"]["io.durable-mcp-server/codeVersion"], "v1",
        "{waiting}"
    );
    // The sleep is written in the same activation, just after the status: once its row is in
    // the object's database, the task is past the gate whatever the runtime does next.
    wait::until_true("the old order's sleep to be journaled", || {
        journaled(state.path(), &old, "settle")
    });
    drop(worker);

    let (_worker, client) = start(state.path(), &[("FIXTURE_CODE", "v2")]);
    let new = create(&client, "order", json!({ "seconds": 1 }));
    let done = wait_until(&client, &new, completed);
    assert_eq!(result_text(&done), "charged 120 receipt true");
    assert_eq!(
        done["result"]["_meta"]["io.durable-mcp-server/codeVersion"], "v2",
        "{done}"
    );
    let done = wait_until(&client, &old, completed);
    assert_eq!(result_text(&done), "charged 100 receipt true", "{done}");
    assert_eq!(
        done["result"]["_meta"]["io.durable-mcp-server/codeVersion"], "v1",
        "{done}"
    );
}

/// Creates a `trip` and waits until it has booked and registered its release.
fn booked_trip(client: &McpClient, broken_release: bool) -> String {
    let id = create(client, "trip", json!({ "broken_release": broken_release }));
    wait_until(client, &id, |response| {
        response["result"]["statusMessage"] == "booked"
    });
    id
}

/// The path and a read-only connection of the object database that holds task `id`.
fn object_holding(state: &Path, id: &str) -> (String, rusqlite::Connection) {
    for path in objects_with_task_rows(state) {
        let connection = open_object(Path::new(&path));
        let holds: i64 = connection
            .query_row(
                "SELECT count(*) FROM task WHERE task_id = ?1",
                [id],
                |row| row.get(0),
            )
            .unwrap_or_else(|e| panic!("read {path}: {e}"));
        if holds > 0 {
            return (path, connection);
        }
    }
    panic!("no object holds task {id}");
}

/// Whether the object holding task `id` has journaled its step (or sleep) `key`.
fn journaled(state: &Path, id: &str, key: &str) -> bool {
    let (path, connection) = object_holding(state, id);
    let rows: i64 = connection
        .query_row(
            "SELECT count(*) FROM steps WHERE task_id = ?1 AND step_key = ?2",
            [id, key],
            |row| row.get(0),
        )
        .unwrap_or_else(|e| panic!("read {path}: {e}"));
    rows > 0
}

/// The status and key of every `$cleanup:` row of the task in its object's database.
fn cleanup_rows(state: &Path, id: &str) -> Vec<(String, String)> {
    let (_, connection) = object_holding(state, id);
    let mut statement = connection
        .prepare("SELECT step_key, status FROM steps WHERE step_key LIKE '$cleanup:%'")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A cancel of a task that registered a compensation: the object's alarm runs it as a
/// journaled step before the task shows `cancelled`; a compensation that keeps failing is
/// retried until the task's cleanup timeout, and the task says what was left unrun. Each
/// failed attempt is logged to the console with the task's id, tool, step and error.
#[test]
fn compensations_run_in_the_object_before_the_task_is_cancelled() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (worker, client) = start(state.path(), &[("RUST_LOG", "warn,durable_mcp=debug")]);

    let id = booked_trip(&client, false);
    client.result("tasks/cancel", json!({ "taskId": id }));
    let cancelled = wait_until(&client, &id, |r| r["result"]["status"] == "cancelled");
    assert_eq!(
        cancelled["result"]["statusMessage"], "booked",
        "{cancelled}"
    );
    assert_eq!(
        cleanup_rows(state.path(), &id),
        [("$cleanup:release".to_owned(), "completed".to_owned())]
    );

    let id = booked_trip(&client, true);
    client.result("tasks/cancel", json!({ "taskId": id }));
    let cleaning = client.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(
        cleaning["status"], "working",
        "the cleanup runs first: {cleaning}"
    );
    let cancelled = wait_until(&client, &id, |r| r["result"]["status"] == "cancelled");
    let message = cancelled["result"]["statusMessage"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("1 compensation(s) not run"), "{cancelled}");
    assert_eq!(
        cleanup_rows(state.path(), &id),
        [("$cleanup:release".to_owned(), "pending".to_owned())]
    );

    // Without the admin token the Worker serves no inspector.
    let inspector = format!("{}/api/tasks", durable_mcp::http::INSPECTOR_PATH);
    assert_eq!(worker.get(&inspector).status, 404);

    // Each failed attempt of the release reached the console as an object with the task's
    // fields (wrangler shows warnings and errors at its log level here).
    let log = worker.log();
    let retries: Vec<&str> = log
        .split("message: 'step attempt failed; retry scheduled',")
        .skip(1)
        .collect();
    assert!(retries.len() >= 2, "the release is retried:\n{log}");
    for retry in retries {
        // The rest of the object: an engine event carries its fields itself, in no span.
        let fields = retry.split("\n  }").next().unwrap_or_default();
        assert!(!fields.contains("spans:"), "{fields}");
        for field in [
            format!("task_id: '{id}'"),
            "tool: 'trip'".to_owned(),
            "step: '$cleanup:release'".to_owned(),
            "error: 'the hotel does not answer'".to_owned(),
        ] {
            assert!(fields.contains(&field), "{field} missing in {fields}");
        }
    }
    // The application's own event in the compensation has the task's id and tool at the top,
    // before the spans it also lists.
    let own_tops: Vec<&str> = log
        .split("message: 'releasing the room',")
        .skip(1)
        .map(|event| event.split("spans:").next().unwrap_or_default())
        .collect();
    assert!(
        own_tops
            .iter()
            .any(|top| top.contains(&format!("task_id: '{id}'")) && top.contains("tool: 'trip'")),
        "no event of the application with the task's id at the top:\n{log}"
    );
}

/// With `DURABLE_MCP_LOG_FORMAT=json` each event reaches the console as one line of JSON, the
/// object the default format writes over several lines: every line that names a task is a
/// whole event (after the mark wrangler puts before a warning), with the task's id and tool at
/// its top level, so a grep for the id follows it.
#[test]
fn the_json_log_format_writes_each_event_on_one_line() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let vars = [
        ("RUST_LOG", "warn,durable_mcp=debug"),
        ("DURABLE_MCP_LOG_FORMAT", "json"),
    ];
    let (worker, client) = start(state.path(), &vars);
    let id = booked_trip(&client, true);
    client.result("tasks/cancel", json!({ "taskId": id }));
    wait_until(&client, &id, |r| r["result"]["status"] == "cancelled");

    // wrangler marks a warning's line (`▲ [WARNING]`, in colour): the event is the rest.
    let log = worker.log();
    let events: Vec<Value> = (log.lines())
        .filter(|line| line.contains(&id))
        .map(|line| {
            let object = line
                .find('{')
                .zip(line.rfind('}'))
                .map_or("", |(start, end)| &line[start..=end]);
            serde_json::from_str(object)
                .unwrap_or_else(|error| panic!("not a line of JSON ({error}): {line}\n{log}"))
        })
        .collect();
    let with_message = |message: &str| -> Vec<&Value> {
        (events.iter())
            .filter(|event| event["message"] == message)
            .collect()
    };
    let retries = with_message("step attempt failed; retry scheduled");
    assert!(retries.len() >= 2, "the release is retried:\n{log}");
    for retry in retries {
        assert_eq!(retry["level"], "WARN", "{retry}");
        assert_eq!(retry["task_id"], id.as_str(), "{retry}");
        assert_eq!(retry["tool"], "trip", "{retry}");
        assert_eq!(retry["step"], "$cleanup:release", "{retry}");
        assert_eq!(retry["error"], "the hotel does not answer", "{retry}");
        assert!(retry.get("spans").is_none(), "{retry}");
    }
    // The application's own event: the task's id, tool and root lifted to the top, as in the
    // default format, beside the spans it is in.
    let own = with_message("releasing the room");
    assert!(!own.is_empty(), "no event of the application:\n{log}");
    for event in own {
        assert_eq!(event["task_id"], id.as_str(), "{event}");
        assert_eq!(event["tool"], "trip", "{event}");
        // A task no other started is the root of its tree.
        assert_eq!(event["root_task_id"], id.as_str(), "{event}");
        let spans = event["spans"].as_array().expect("the spans it is in");
        assert!(
            spans.iter().any(|span| span["task_id"] == id.as_str()),
            "{event}"
        );
    }
    assert!(
        !log.contains("message: '"),
        "an event written as an object:\n{log}"
    );
}

/// A `gallery` under workerd: each `thumbnail` child is its own Durable Object, created from
/// the parent's object; when a child ends, its object tells the parent's, whose alarm runs the
/// parent on: the parent ran to start them and once per outcome at most, with no polling.
#[test]
fn child_tasks_are_objects_of_their_own_that_wake_their_parent() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (_worker, client) = start(state.path(), &[]);
    let gallery = children::start_gallery(&client, &[320, 640], 2);
    let done = children::wait_for_status(&client, &gallery.parent, "completed");
    assert_eq!(children::result_text(&done), "total 960", "{done}");
    let (parent_object, parent) = object_holding(state.path(), &gallery.parent);
    for child in &gallery.children {
        let (object, _) = object_holding(state.path(), child);
        assert_ne!(object, parent_object, "a child is an object of its own");
        let task = client.result("tasks/get", json!({ "taskId": child }));
        assert_eq!(task["status"], "completed", "{task}");
    }
    let runs: i64 = parent
        .query_row(
            "SELECT run_attempt FROM task WHERE task_id = ?1",
            [&gallery.parent],
            |row| row.get(0),
        )
        .unwrap();
    assert!(
        (2..=3).contains(&runs),
        "the parent ran {runs} times: once to start, then when woken by its children"
    );
}

/// Cancelling a parent under workerd cancels its children's objects' tasks before the parent
/// shows `cancelled`.
#[test]
fn cancelling_a_parent_cancels_its_children_in_their_objects() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (_worker, client) = start(state.path(), &[]);
    children::cancelling_the_parent_cancels_the_children(&client);
}

/// The task inspector under workerd, behind the admin token: the operator's round that the
/// native host runs too (listing through the index that holds every task while the
/// inspector is on, each task's object answering for it).
#[test]
fn an_operator_lists_reads_answers_wakes_and_cancels_tasks() {
    const TOKEN: &str = "inspector-token-for-tests-0123456789";
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let (worker, client) = start(state.path(), &[("DURABLE_MCP_INSPECTOR_TOKEN", TOKEN)]);
    let address = ([127, 0, 0, 1], worker.port()).into();
    let inspector = Inspector::new(address, durable_mcp::http::INSPECTOR_PATH, TOKEN);
    operator_round(&client, &inspector);
}
