//! The fixture server the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! runs against: the Tasks extension fixtures ([`tasks`]) and the core fixtures of the
//! 2026-07-28 revision ([`core`]), served natively. Scenarios this framework cannot pass yet
//! are listed, with the reason, in `tests/conformance/expected-failures.yml`.
//!
//! `PORT` (default 8787) and `DURABLE_MCP_DATA` (default `./.durable-mcp`) configure it.

mod core;
mod schema;
mod tasks;

use durable_mcp::McpServer;
use durable_mcp::native::{HostError, NativeHost};

fn main() -> Result<(), HostError> {
    NativeHost::new(server()).from_env()?.run()
}

fn server() -> McpServer {
    let server = McpServer::new("durable-mcp-conformance", env!("CARGO_PKG_VERSION"))
        .instructions("Fixture tools and resources for the MCP conformance suite.");
    // The tasks fixtures go first: header-validation scenarios call the first listed tool.
    core::add(tasks::add(server))
}
