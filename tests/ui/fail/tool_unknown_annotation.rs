// Checks: an unknown annotation is named, with the valid ones.
use durable_mcp::tool;

#[tool(annotations(read_only, cached))]
async fn hello() -> String {
    String::new()
}

fn main() {}
