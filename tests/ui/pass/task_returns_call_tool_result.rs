// Checks: a task may return a `CallToolResult` it builds itself.
use durable_mcp::wire::CallToolResult;
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn work(_cx: &TaskContext, _input: Input) -> Result<CallToolResult, TaskError> {
    Ok(CallToolResult::text("done").with_structured(serde_json::json!({ "pages": 3 })))
}

fn main() {
    let _server = McpServer::new("ui", "0").task(work);
}
