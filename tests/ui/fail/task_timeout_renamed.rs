// Checks: the old spelling `timeout` of #[mcp_task] is refused at the option with its new name,
// `step_timeout` (the timeout of each step), and the duration as written.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(timeout = "30s")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
