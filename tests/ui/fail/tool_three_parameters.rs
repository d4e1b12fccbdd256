// Checks: a #[tool] fn takes at most the call and one input.
use durable_mcp::{ToolCall, tool};

#[tool]
async fn add(_call: &ToolCall, _a: u32, _b: u32) -> String {
    String::new()
}

fn main() {}
