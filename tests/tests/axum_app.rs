//! The axum-app example (`examples/axum-app`): the MCP endpoint mounted in an axum service of
//! the application's own. The service's middleware (its bearer check, its request tracing)
//! and the endpoint's own checks (Origin, body size, method) both apply; the principal the
//! service's check names is the one tasks are bound to; and a graceful shutdown of the service
//! with tasks in flight (and a listen stream open) leaves every task to resume on the next
//! start. The black-box suite and the client drivers run against the same service with the
//! fixture tools (`conformance-axum`, in `cargo xtask clients`).

use std::time::Duration;

use durable_mcp_tests::http::{Connection, Response};
use durable_mcp_tests::listen::{End, Listen};
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::server::ServerProcess;
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

/// The example with two users, its state in `dir`.
fn start(dir: &std::path::Path) -> ServerProcess {
    let tokens = format!("alice:{ALICE},bob:{BOB}");
    ServerProcess::start("axum-app", dir, &[("AXUM_APP_TOKENS", &tokens)])
}

/// `Authorization: Bearer <token>`.
fn bearer(token: &str) -> (String, String) {
    ("Authorization".to_owned(), format!("Bearer {token}"))
}

/// A well-formed request of `method` sent with `token`.
fn send_as(client: &McpClient, token: &str, method: &str, params: Value) -> Response {
    let (body, mut headers) = client.build(method, params, true);
    headers.push(bearer(token));
    client.send_built(&body, &headers)
}

/// The result of a request sent with `token`, which must succeed.
fn result_as(client: &McpClient, token: &str, method: &str, params: Value) -> Value {
    let response = send_as(client, token, method, params).json();
    assert!(response.get("error").is_none(), "{method}: {response}");
    response["result"].clone()
}

/// Starts `remind` as the user of `token`: the task's id.
fn remind(client: &McpClient, token: &str, text: &str, seconds: u64) -> String {
    let params = json!({ "name": "remind", "arguments": { "text": text, "seconds": seconds } });
    let result = result_as(client, token, "tools/call", params);
    assert_eq!(result["resultType"], "task", "{result}");
    result["taskId"].as_str().expect("taskId").to_owned()
}

/// Polls the task as the user of `token` until it completes: its result's text.
fn reminder(client: &McpClient, token: &str, task_id: &str) -> String {
    let task = durable_mcp_tests::wait::until(
        &format!("task {task_id} to complete"),
        || result_as(client, token, "tasks/get", json!({ "taskId": task_id })),
        |task| task["status"] == "completed",
    );
    task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {task}"))
        .to_owned()
}

/// A plain GET of `path` on the service.
fn get(server: &ServerProcess, path: &str) -> Response {
    Connection::open(server.address())
        .and_then(|mut connection| connection.request("GET", path, &[], b""))
        .unwrap_or_else(|error| panic!("GET {path}: {error}"))
}

#[test]
fn the_services_middleware_and_the_endpoints_own_checks_both_apply() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let client = McpClient::new(server.url());

    // The service's own routes, public.
    let health = get(&server, "/health");
    assert_eq!(
        (health.status, health.json()),
        (200, json!({ "status": "ok" }))
    );
    let page = get(&server, "/");
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap_or_default()
            .starts_with("text/html")
    );

    // The service's bearer check answers for the endpoint: no token, an unknown one.
    let (body, headers) = client.build("tools/list", json!({}), true);
    for token in [None, Some("not-a-token-of-anyone")] {
        let mut headers = headers.clone();
        headers.extend(token.map(bearer));
        let refused = client.send_built(&body, &headers);
        assert_eq!(refused.status, 401, "token {token:?}");
        let challenge = refused.header("www-authenticate").unwrap_or_default();
        assert_eq!(challenge, "Bearer realm=\"axum-app\"");
        assert_eq!(refused.json()["error"]["code"], -32001);
    }

    // Past it, the endpoint's own checks: a foreign Origin, a body over the limit, a GET.
    let (body, mut headers) = client.build("tools/list", json!({}), true);
    headers.push(bearer(ALICE));
    let mut foreign = headers.clone();
    foreign.push(("Origin".to_owned(), "https://elsewhere.example".to_owned()));
    assert_eq!(client.send_built(&body, &foreign).status, 403);
    let huge = vec![b' '; 4 * 1024 * 1024 + 1];
    let borrowed = durable_mcp_tests::http::borrowed(&headers);
    assert_eq!(client.raw("POST", &borrowed, &huge).status, 413);
    assert_eq!(client.raw("GET", &borrowed, b"").status, 405);
    let tools = client.send_built(&body, &headers).json();
    assert_eq!(tools["result"]["tools"][0]["name"], "remind", "{tools}");

    // The check's user is the task's principal: alice's task is hers alone.
    let task_id = remind(&client, ALICE, "water the plants", 1);
    let strangers = send_as(&client, BOB, "tasks/get", json!({ "taskId": task_id })).json();
    assert!(
        strangers.get("error").is_some(),
        "bob read alice's task: {strangers}"
    );
    let text = reminder(&client, ALICE, &task_id);
    assert_eq!(text, "Reminder for alice: water the plants");

    // The service's request tracing saw the refusals and the answers.
    let log = server.log();
    assert!(log.contains("finished processing request"), "{log}");
    assert!(log.contains("status=401"), "{log}");
}

#[test]
fn a_graceful_shutdown_with_tasks_in_flight_leaves_each_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let client = McpClient::new(server.url());
    let tasks: Vec<(String, String)> = (1..=3)
        .map(|n| {
            let text = format!("errand {n}");
            (remind(&client, ALICE, &text, 3 + n), text)
        })
        .collect();
    // A listen stream open through the shutdown: it must end, not hold the service up.
    let ids: Vec<&str> = tasks.iter().map(|(id, _)| id.as_str()).collect();
    let authorization = format!("Bearer {ALICE}");
    let extra = [("Authorization", authorization.as_str())];
    let mut stream = Listen::open(&client, json!({ "taskIds": ids }), &extra);

    let exit = server
        .terminate(Duration::from_secs(30))
        .expect("the service stops within 30 s of SIGTERM");
    assert!(exit.success(), "the service exited with {exit}");
    let (_, end) = stream.end();
    assert!(
        matches!(end, End::Complete(_)),
        "the stream was cut: {end:?}"
    );

    // The same state directory: the host's lock was released, and every task resumes.
    let server = start(dir.path());
    let client = McpClient::new(server.url());
    for (task_id, text) in &tasks {
        let answer = reminder(&client, ALICE, task_id);
        assert_eq!(answer, format!("Reminder for alice: {text}"));
    }
    assert!(server.log().contains("stored_tasks=3"), "{}", server.log());
}
