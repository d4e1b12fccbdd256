//! The fixtures of the core scenarios of the 2026-07-28 revision: tools answering each kind of
//! content, resources, prompts and completion, multi-round-trip input (SEP-2322), and the
//! stateless-server diagnostics (SEP-2575).

mod client_requests;
mod content;
mod diagnostics;
mod input;
mod input_required;
mod media;
mod progress;
mod prompts;
mod resources;
mod sealed_state;

use durable_mcp::McpServer;
use durable_mcp::wire::Tool;
use serde_json::json;

use crate::schema::object;

/// Adds every core fixture to `server`.
pub fn add(server: McpServer) -> McpServer {
    let server = content::add(server);
    let server = client_requests::add(server);
    let server = progress::add(server);
    let server = input_required::add(server);
    let server = diagnostics::add(server);
    let server = prompts::add(server);
    resources::add(server)
}

/// A tool taking no arguments.
fn no_arguments(name: &str, description: &str) -> Tool {
    Tool::new(name, object(json!({}))).description(description)
}
