// Checks: the success type must convert into a CallToolResult (IntoCallToolResult).
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn work(_cx: &TaskContext, _input: Input) -> Result<u64, TaskError> {
    Ok(0)
}

fn main() {}
