// Checks: the old spelling `retries` of #[mcp_task] is refused at the option with its new name,
// `retry`, and the same fields under it.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(retries(limit = 3, delay = "1s"))]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
