// Checks: a #[mcp_task] fn returns a Result; one without a return type is refused at its name.
use durable_mcp::{TaskContext, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn work(_cx: &TaskContext, _input: Input) {}

fn main() {}
