// Checks: `optional` (the default, written out) keeps the tool callable without the Tasks extension.
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(optional)]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let tool = work();
    assert!(format!("{tool:?}").contains("required: false"));
    let _server = McpServer::new("ui", "0").task(tool);
}
