// Checks: the error type must convert into a TaskError; `()` does not.
use durable_mcp::{TaskContext, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, ()> {
    Ok(String::new())
}

fn main() {}
