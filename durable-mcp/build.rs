//! Says once which host this build of the crate has, as cfgs its code reads instead of
//! repeating the feature and target test: `native_host` (the `native` feature, off wasm32),
//! `cloudflare_host` (the `cloudflare` feature, on wasm32) and `any_host` (either). A feature
//! whose target is not the build's does nothing, so that `--all-features` builds everywhere.
//! `task_listing` says that something lists tasks (`mcp-2025`'s `tasks/list` or the
//! inspector), so a Worker keeps its listing indexes.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(native_host, cloudflare_host, any_host, task_listing)");
    println!("cargo::rerun-if-changed=build.rs");
    let wasm32 = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "wasm32");
    let native = std::env::var_os("CARGO_FEATURE_NATIVE").is_some() && !wasm32;
    let cloudflare = std::env::var_os("CARGO_FEATURE_CLOUDFLARE").is_some() && wasm32;
    let listing = ["CARGO_FEATURE_MCP_2025", "CARGO_FEATURE_INSPECTOR"]
        .iter()
        .any(|feature| std::env::var_os(feature).is_some());
    for (cfg, on) in [
        ("native_host", native),
        ("cloudflare_host", cloudflare),
        ("any_host", native || cloudflare),
        ("task_listing", listing),
    ] {
        if on {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
