// Checks: `ttl` takes a duration, or "forever" to keep tasks without limit.
use std::time::Duration;

use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(ttl = "90m")]
async fn kept_a_while(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

#[mcp_task(ttl = "forever")]
async fn kept_forever(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let server = McpServer::new("ui", "0")
        .task(kept_a_while)
        .task(kept_forever);
    let registry = server.task_registry();
    let ttl = |name: &str| registry.get(name).unwrap().task_options().ttl;
    assert_eq!(ttl("kept_a_while"), Some(Duration::from_secs(90 * 60)));
    assert_eq!(ttl("kept_forever"), None);
}
