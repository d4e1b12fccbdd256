//! The crates as a user gets them: packaged as `cargo publish` would upload them (with cargo's
//! verify build of the unpacked package, which fails on a file outside the package), and built
//! with the oldest Rust they declare (`rust-version`).

use std::error::Error;
use std::process::Command;

use crate::checks::{cargo, step};
use crate::clients::workspace_root;

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

/// The published crates, the macros first: `durable-mcp` pins them exactly.
const CRATES: [&str; 2] = ["durable-mcp-macros", "durable-mcp"];

/// `cargo package` of both crates together (cargo verifies `durable-mcp` against the packaged
/// macros crate, not the workspace's), then a build of both with every feature on the Rust of
/// their `rust-version`, installed through rustup if missing.
pub fn check() -> Result<()> {
    // A working tree with changes is packaged as it is: the check is of its contents.
    let mut package = vec!["package", "--allow-dirty"];
    for name in CRATES {
        package.extend(["--package", name]);
    }
    cargo(&package, &[])?;

    let toolchain = declared_rust_version()?;
    step(Command::new("rustup").args([
        "toolchain",
        "install",
        &toolchain,
        "--profile",
        "minimal",
    ]))?;
    let mut build = Command::new("rustup");
    build.args(["run", &toolchain, "cargo", "check", "--all-features"]);
    for name in CRATES {
        build.args(["--package", name]);
    }
    step(&mut build)
}

/// The workspace's `rust-version`, from the root manifest.
fn declared_rust_version() -> Result<String> {
    let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml"))?;
    manifest
        .lines()
        .find_map(|line| {
            let value = line.strip_prefix("rust-version")?.trim_start();
            Some(value.strip_prefix('=')?.trim().trim_matches('"').to_owned())
        })
        .ok_or_else(|| "the root Cargo.toml declares no rust-version".into())
}
