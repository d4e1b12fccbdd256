// Checks: with two parameters, the first is the call, by reference.
use durable_mcp::{ToolCall, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[tool]
async fn hello(_call: ToolCall, _input: Input) -> String {
    String::new()
}

fn main() {}
