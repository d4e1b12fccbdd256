// Checks: `name` must not be empty.
use durable_mcp::tool;

#[tool(name = "")]
async fn hello() -> String {
    String::new()
}

fn main() {}
