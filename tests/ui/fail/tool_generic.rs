// Checks: a #[tool] fn cannot be generic.
use durable_mcp::tool;

#[tool]
async fn hello<T>() -> String {
    String::new()
}

fn main() {}
