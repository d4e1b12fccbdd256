//! The server a black-box test talks to: the one at `DURABLE_MCP_TEST_URL` when set (so the
//! same suite runs against the Worker), else a fresh `conformance-server` child process.

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::server::ServerProcess;
use serde_json::{Value, json};

/// A server under test and a client of it.
pub struct Target {
    pub client: McpClient,
    _server: Option<(ServerProcess, tempfile::TempDir)>,
}

impl Target {
    /// The endpoint under test.
    pub fn start() -> Self {
        if let Ok(url) = std::env::var("DURABLE_MCP_TEST_URL") {
            return Target {
                client: McpClient::new(&url),
                _server: None,
            };
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let server = ServerProcess::start("conformance-server", dir.path(), &[]);
        Target {
            client: McpClient::new(server.url()),
            _server: Some((server, dir)),
        }
    }

    /// Calls a task tool declaring the extension and returns the new task's id.
    pub fn create_task(&self, tool: &str, arguments: Value) -> String {
        let result = self.client.result(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        );
        assert_eq!(
            result["resultType"], "task",
            "{tool} did not create a task: {result}"
        );
        result["taskId"].as_str().expect("taskId").to_owned()
    }

    /// `tasks/get` of `task_id`.
    pub fn get(&self, task_id: &str) -> Value {
        self.client
            .result("tasks/get", json!({ "taskId": task_id }))
    }

    /// Polls `tasks/get` until the status is `status`.
    pub fn wait_for(&self, task_id: &str, status: &str) -> Value {
        self.wait_until(task_id, status, |task| task["status"] == status)
    }

    /// Polls the task until `ready` holds for it (`what` names the wait in the failure
    /// message), and returns it.
    pub fn wait_until(&self, task_id: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
        let awaited = format!("task {task_id} to become {what}");
        durable_mcp_tests::wait::until(&awaited, || self.get(task_id), ready)
    }
}
