// Checks: a #[tool] fn returns its result.
use durable_mcp::tool;

#[tool]
async fn hello() {}

fn main() {}
