//! The fixture server the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! runs against: the Tasks extension fixtures (`tasks`) and the core fixtures of the
//! 2026-07-28 revision (`core`), plus a few fixtures of durable-mcp's own suites (`suite`).
//! Scenarios this framework cannot pass yet are listed, with the reason, in
//! `tests/conformance/expected-failures.yml`.
//!
//! One source, two hosts: `src/main.rs` serves [`server`] natively (`PORT`, default 8787, and
//! `DURABLE_MCP_DATA`, default `./.durable-mcp`), and built for `wasm32-unknown-unknown` by
//! worker-build the same server runs as a Cloudflare Worker (`src/worker.rs`, `wrangler.toml`).

mod core;
mod durable;
#[cfg(not(target_arch = "wasm32"))]
pub mod own_store;
mod schema;
mod suite;
mod tasks;

#[cfg(all(target_arch = "wasm32", feature = "worker-entry"))]
mod worker;

use durable_mcp::McpServer;

pub use durable::Code;

/// The fixture server: every tool, task, resource and prompt the scenarios call, the completion
/// hook, and the fixtures of durable-mcp's own suites (`suite`, `durable`), with the first
/// version of the `order` fixture.
pub fn server() -> McpServer {
    server_with(Code::First)
}

/// The fixture server with `order` at `code`: a deploy of changed code, for the workerd suite
/// (the Worker's objects pick it from the `FIXTURE_CODE` variable).
pub fn server_with(code: Code) -> McpServer {
    let server = McpServer::new("durable-mcp-conformance", env!("CARGO_PKG_VERSION"))
        .instructions("Fixture tools and resources for the MCP conformance suite.");
    // The tasks fixtures go first: header-validation scenarios call the first listed tool.
    durable::add(suite::add(core::add(tasks::add(server))), code)
}
