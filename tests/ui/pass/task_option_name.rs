// Checks: `#[mcp_task(name = "..")]` names the tool instead of the fn.
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(name = "send-report")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let server = McpServer::new("ui", "0").task(work);
    assert_eq!(server.tool_names(), ["send-report"]);
    assert!(server.task_registry().get("send-report").is_some());
}
