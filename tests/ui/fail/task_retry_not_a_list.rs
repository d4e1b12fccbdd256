// Checks: `#[mcp_task(retry = 3)]` is refused with what to write: `retry(limit = 3)`.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(retry = 3)]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
