// Checks: `required` refuses the tool to clients without the Tasks extension.
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(required)]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let tool = work();
    assert!(format!("{tool:?}").contains("required: true"));
    let _server = McpServer::new("ui", "0").task(tool);
}
