// Checks: the input derives JsonSchema (and Deserialize), said at the input type.
use durable_mcp::tool;

#[derive(serde::Deserialize)]
struct Input {
    _name: String,
}

#[tool]
async fn hello(_input: Input) -> String {
    String::new()
}

fn main() {}
