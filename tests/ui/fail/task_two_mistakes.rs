// Checks: two mistakes in one attribute, a malformed `ttl` and the old spelling `retries`,
// are both reported in one build, each at its option.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(ttl = "3 dayz", retries = 3, attempts = 2)]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
