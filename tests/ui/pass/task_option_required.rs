// Checks: `required` (the default, written out) compiles.
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(required)]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let tool = work();
    assert!(format!("{tool:?}").contains("optional: false"));
    let _server = McpServer::new("ui", "0").task(tool);
}
