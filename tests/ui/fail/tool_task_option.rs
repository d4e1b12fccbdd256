// Checks: an option of #[mcp_task] is not one of #[tool], and the valid ones are named.
use durable_mcp::tool;

#[tool(ttl = "1h", title = "Hello")]
async fn hello() -> String {
    String::new()
}

fn main() {}
