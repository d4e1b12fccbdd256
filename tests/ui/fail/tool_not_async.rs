// Checks: a #[tool] fn must be async.
use durable_mcp::tool;

#[tool]
fn hello() -> String {
    String::new()
}

fn main() {}
