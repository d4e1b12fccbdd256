//! `report-task` on the native host. Built for wasm32, the library's Worker entry is the
//! program and this binary is empty.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), durable_mcp::native::HostError> {
    let config = report_task::Config::from_env()?;
    durable_mcp::native::NativeHost::new(move || report_task::server(config.clone()))
        .from_env()?
        .run()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
