// Checks: `crate = ".."` (and an unquoted path) makes the expansion name the runtime through
// that path.
mod support {
    pub use durable_mcp as runtime;
}

use support::runtime::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(crate = "crate::support::runtime")]
async fn quoted(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

#[mcp_task(crate = crate::support::runtime)]
async fn unquoted(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let server = McpServer::new("ui", "0").task(quoted).task(unquoted);
    assert_eq!(server.tool_names(), ["quoted", "unquoted"]);
}
