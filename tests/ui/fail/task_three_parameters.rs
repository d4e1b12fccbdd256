// Checks: a #[mcp_task] fn takes at most the context and one input; a third parameter is refused.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn work(_cx: &TaskContext, _input: Input, _extra: u32) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
