//! The conformance fixture server on the native host. Built for wasm32, the library's Worker
//! entry is the program and this binary is empty.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), durable_mcp::native::HostError> {
    durable_mcp::native::NativeHost::new(conformance_server::server)
        .from_env()?
        .run()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
