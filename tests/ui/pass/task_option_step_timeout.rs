// Checks: `step_timeout` sets the task's default per-attempt step timeout.
use std::time::Duration;

use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(step_timeout = "45s")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let server = McpServer::new("ui", "0").task(work);
    let registry = server.task_registry();
    let options = registry.get("work").unwrap().task_options();
    assert_eq!(options.step_timeout, Duration::from_secs(45));
}
