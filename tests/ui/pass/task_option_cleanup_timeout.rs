// Checks: `cleanup_timeout` sets how long the compensations may take after a cancel.
use std::time::Duration;

use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(cleanup_timeout = "90s")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let server = McpServer::new("ui", "0").task(work);
    let registry = server.task_registry();
    let options = registry.get("work").unwrap().task_options();
    assert_eq!(options.cleanup_timeout, Duration::from_secs(90));
    assert_eq!(registry.version(), Some("0"), "the server's version by default");
}
