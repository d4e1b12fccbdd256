// Checks: an unknown #[mcp_task] option is refused at its name, listing the valid options.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(attempts = 3)]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
