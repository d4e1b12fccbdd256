// Checks: `#[mcp_task(description = "..")]` wins over the doc comment.
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

/// The doc comment, which the option replaces.
#[mcp_task(description = "Sends the monthly report.")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let tool = work();
    let debug = format!("{tool:?}");
    assert!(debug.contains("Sends the monthly report."), "{debug}");
    assert!(!debug.contains("The doc comment"), "{debug}");
    let _server = McpServer::new("ui", "0").task(tool);
}
