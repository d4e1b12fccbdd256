//! `hello` natively: `PORT` (default 8787) and `DURABLE_MCP_DATA` (default `./.durable-mcp`).
#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), durable_mcp::native::HostError> {
    let host = durable_mcp::native::NativeHost::new(hello::server);
    host.from_env()?.run()
}
#[cfg(target_arch = "wasm32")]
fn main() {}
