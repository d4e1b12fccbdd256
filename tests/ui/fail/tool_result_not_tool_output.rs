// Checks: the result is one a tool can answer with, said at the return type.
use durable_mcp::tool;

#[tool]
async fn count() -> Result<u32, String> {
    Ok(3)
}

fn main() {}
