// Checks: a #[mcp_task] fn returning a bare value instead of `Result<R, E>`.
use durable_mcp::{TaskContext, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn work(_cx: &TaskContext, _input: Input) -> String {
    String::new()
}

fn main() {}
