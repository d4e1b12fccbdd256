// Checks: a task may return `Json<T>` of a Serialize type as structured content.
use durable_mcp::wire::Json;
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[derive(serde::Serialize)]
struct Summary {
    pages: u32,
}

#[mcp_task]
async fn work(_cx: &TaskContext, _input: Input) -> Result<Json<Summary>, TaskError> {
    Ok(Json(Summary { pages: 3 }))
}

fn main() {
    let _server = McpServer::new("ui", "0").task(work);
}
