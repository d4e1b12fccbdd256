//! The conformance fixture server on the native host. Built for wasm32, the library's Worker
//! entry is the program and this binary is empty.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), durable_mcp::native::HostError> {
    let host = durable_mcp::native::NativeHost::new(conformance_server::server).from_env()?;
    // The application's own store, in a file of its own in the state directory.
    let host = match std::env::var("CONFORMANCE_STORE").as_deref() {
        Ok("own") => {
            let dir = std::env::var_os("DURABLE_MCP_DATA")
                .unwrap_or_else(|| durable_mcp::native::NativeHost::DEFAULT_DATA_DIR.into());
            let path = std::path::Path::new(&dir).join("own-store.sqlite3");
            host.store(conformance_server::own_store::OwnStore::opener(path))
        }
        Ok(other) => {
            let message = format!("CONFORMANCE_STORE={other:?}: the one store to name is `own`");
            return Err(durable_mcp::native::HostError::Config(message));
        }
        Err(_) => host,
    };
    host.run()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
