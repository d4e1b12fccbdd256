// Checks: a #[tool] with a mistake still registers without a second error.
use durable_mcp::{McpServer, tool};

#[tool(nmae = "hello")]
async fn hello() -> String {
    String::new()
}

fn main() {
    let _server = McpServer::new("ui", "0").tool(hello);
}
