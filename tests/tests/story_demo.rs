//! The story demo's native binary, black-box: its page routes, and the restart button, which
//! kills the host in the middle of a story (the supervisor starts it again) without losing the
//! story.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use durable_mcp_tests::http::Response;
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::server::ServerProcess;
use durable_mcp_tests::wait;
use serde_json::{Value, json};

/// `method path` to the demo, outside the MCP endpoint.
fn page(address: SocketAddr, method: &str, path: &str) -> Response {
    McpClient::new(&format!("http://{address}{path}")).raw(method, &[], b"")
}

/// Waits until the host answers on `address` (the supervisor prints the page's URL before
/// its host listens, and a restarted host takes a moment).
fn wait_for_host(address: SocketAddr) {
    wait::until_true(&format!("the host to listen on {address}"), || {
        TcpStream::connect(address).is_ok()
    });
}

/// The process id the host holding the state directory wrote into its lock file.
fn lock_holder(server: &ServerProcess) -> Option<String> {
    let pid = std::fs::read_to_string(server.data_dir().join("host.lock")).ok()?;
    Some(pid.trim().to_owned()).filter(|pid| !pid.is_empty())
}

/// Polls `tasks/get` until `done` holds of the task.
fn poll_until(client: &McpClient, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    let read = || client.result("tasks/get", json!({ "taskId": task }));
    wait::until(&format!("task {task}"), read, done)
}

#[test]
fn serves_the_page_at_the_root_and_at_each_task() {
    let state = tempfile::tempdir().unwrap();
    let server = ServerProcess::start("story-demo", state.path(), &[]);
    let address = server.address();
    wait_for_host(address);
    for path in ["/", "/task/0123abcd"] {
        let response = page(address, "GET", path);
        assert_eq!(response.status, 200, "{path}");
        assert!(
            String::from_utf8_lossy(&response.body).contains("<html"),
            "{path}"
        );
    }
    assert_eq!(page(address, "GET", "/app.js").status, 200);
    assert_eq!(page(address, "GET", "/nothing-here").status, 404);
    let host = page(address, "GET", "/demo/host").json();
    assert_eq!(host, json!({ "host": "native", "restart": true }));

    // Another site's page cannot press the restart button.
    let holder = lock_holder(&server);
    let restart = McpClient::new(&format!("http://{address}/demo/restart"));
    let refused = restart.raw("POST", &[("Origin", "http://evil.example")], b"");
    assert_eq!(refused.status, 403);
    // Not synchronisation: the window in which a restart must not happen, well past the
    // moment an accepted press makes the host exit (150 ms after answering). Nothing is
    // awaited, so a slow machine cannot fail the test; it could only miss a late restart.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(lock_holder(&server), holder, "the host was restarted");
}

#[test]
fn the_restart_button_kills_the_host_mid_story_and_the_story_goes_on() {
    let state = tempfile::tempdir().unwrap();
    let server = ServerProcess::start("story-demo", state.path(), &[]);
    let address = server.address();
    wait_for_host(address);
    let client = McpClient::new(&format!("http://{address}/mcp"));

    let arguments = json!({ "story": "fixture", "name": "Tess", "seed": 7 });
    let created = client.result(
        "tools/call",
        json!({ "name": "start", "arguments": arguments }),
    );
    let task = created["taskId"].as_str().expect("a task").to_owned();
    let before = poll_until(&client, &task, |t| t["status"] == "input_required");
    assert!(
        before["inputRequests"]["fork:trailhead"].is_object(),
        "{before}"
    );

    let first_host = lock_holder(&server).expect("the host holds the state directory");
    assert_eq!(page(address, "POST", "/demo/restart").status, 202);
    // The host exits on its own a moment after answering; the supervisor starts another.
    wait::until_true("a new host to take the state directory", || {
        lock_holder(&server).is_some_and(|pid| pid != first_host)
    });
    wait_for_host(address);

    let after = client.result("tasks/get", json!({ "taskId": task }));
    assert_eq!(after["status"], "input_required", "{after}");
    assert_eq!(after["statusMessage"], before["statusMessage"]);
    assert_eq!(after["inputRequests"], before["inputRequests"]);

    let choice = json!({ "action": "accept", "content": { "choice": "ridge" } });
    let answer = json!({ "taskId": task, "inputResponses": { "fork:trailhead": choice } });
    client.result("tasks/update", answer);
    let done = poll_until(&client, &task, |t| t["status"] == "completed");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "[ending:home] Tess made it across."
    );
}
