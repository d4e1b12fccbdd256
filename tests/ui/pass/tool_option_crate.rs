// Checks: `crate = path` reaches durable-mcp through a re-export.
mod reexport {
    pub use durable_mcp;
}

#[durable_mcp::tool(crate = reexport::durable_mcp)]
async fn hello() -> String {
    "hi".to_owned()
}

fn main() {
    let _server = reexport::durable_mcp::McpServer::new("ui", "0").tool(hello);
}
