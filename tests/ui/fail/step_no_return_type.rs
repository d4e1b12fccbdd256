// Checks: a #[step] fn without a return type is refused at its name.
use durable_mcp::step;

#[step]
async fn fetch() {}

fn main() {}
