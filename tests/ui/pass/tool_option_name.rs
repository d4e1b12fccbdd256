// Checks: `name` sets the tool's name.
use durable_mcp::{McpServer, tool};

#[tool(name = "say-hi")]
async fn hello() -> String {
    "hi".to_owned()
}

fn main() {
    assert_eq!(hello().tool().name, "say-hi");
    let _server = McpServer::new("ui", "0").tool(hello);
}
