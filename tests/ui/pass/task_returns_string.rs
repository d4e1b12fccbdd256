// Checks: a task may return `Result<String, TaskError>` (and `&'static str`).
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn owned(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok("done".to_owned())
}

#[mcp_task]
async fn borrowed(_cx: &TaskContext, _input: Input) -> Result<&'static str, TaskError> {
    Ok("done")
}

fn main() {
    let _server = McpServer::new("ui", "0").task(owned).task(borrowed);
}
