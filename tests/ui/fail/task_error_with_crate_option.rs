// Checks: a failing #[mcp_task] with `crate = ..` reports only its mistake: the stand-in it
// leaves for the fn names `TaskTool` through the given path, not `::durable_mcp`.
mod reexport {
    pub use durable_mcp;
}

use reexport::durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(crate = reexport::durable_mcp, ttl = "soon")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let _server = McpServer::new("ui", "0").task(work);
}
