// Checks: `#[mcp_task(title = "..")]` compiles and the task registers.
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(title = "Send a report")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let tool = work();
    assert!(format!("{tool:?}").contains("Send a report"));
    let server = McpServer::new("ui", "0").task(tool);
    assert_eq!(server.tool_names(), ["work"]);
}
