// Checks: `duration!` refuses a literal outside the duration grammar at the literal, saying
// which forms it accepts.
use durable_mcp::{TaskContext, TaskError, duration, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn work(cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    cx.sleep("pause", duration!("5 minutes")).await?;
    Ok(String::new())
}

fn main() {}
