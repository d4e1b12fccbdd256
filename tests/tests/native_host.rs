//! The native host as a process: graceful shutdown, and tasks surviving a restart on the
//! same state directory.

use std::time::Duration;

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::server::ServerProcess;
use serde_json::json;

fn create(client: &McpClient, seconds: f64) -> String {
    let created = client.result(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": seconds, "label": "later" } }),
    );
    created["taskId"].as_str().unwrap().to_owned()
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
    let client = McpClient::new(server.url());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let task = client.result("tasks/get", json!({ "taskId": id }));
        if task["status"] == "completed" {
            assert_eq!(task["result"]["content"][0]["text"], "computed later");
            break;
        }
        assert_eq!(task["status"], "working", "{task}");
        assert!(
            std::time::Instant::now() < deadline,
            "never completed: {task}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_state_directory_holds_one_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start("conformance-server", dir.path(), &[]);
    create(&McpClient::new(server.url()), 60.0);
    assert!(dir.path().join(durable_mcp::native::DATABASE_FILE).exists());
    server.kill();
}
