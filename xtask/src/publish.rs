//! The crates as a user gets them: packaged as `cargo publish` would upload them (with cargo's
//! verify build of the unpacked package, which fails on a file outside the package), and built
//! with the oldest Rust they declare (`rust-version`).

use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::Result;
use xtask::process::{target_dir, workspace_root};

use crate::checks::{cargo, step};

/// The published crates, the macros first: `durable-mcp` pins them exactly.
const CRATES: [&str; 2] = ["durable-mcp-macros", "durable-mcp"];

/// The target directory of the verify builds, under cargo's.
const VERIFY_DIR: &str = "package-verify";

/// `cargo package` of both crates together (cargo verifies `durable-mcp` against the packaged
/// macros crate, not the workspace's), then a build of both with every feature on the Rust of
/// their `rust-version`, installed through rustup if missing.
pub fn check() -> Result<()> {
    let verify_dir = target_dir(&workspace_root()).join(VERIFY_DIR);
    forget_earlier_verifications(&verify_dir)?;
    // A working tree with changes is packaged as it is: the check is of its contents.
    let mut package = vec!["package", "--allow-dirty"];
    for name in CRATES {
        package.extend(["--package", name]);
    }
    let verify_dir = verify_dir.to_string_lossy().into_owned();
    cargo(&package, &[("CARGO_TARGET_DIR", &verify_dir)])?;

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

/// Forgets the macros crate an earlier run packaged. Cargo serves the packaged macros crate to
/// the verify build of `durable-mcp` from a registry of its own under `target/package/`: it
/// unpacks it into its source cache under the same name and version as last time and keeps a
/// copy it finds there, and it takes a registry crate's build for fresh by its version alone.
/// Without this, a second run verifies `durable-mcp` against the macros crate of the first.
/// So the verify builds get a target directory of their own (`verify_dir`), whose fingerprints
/// of these crates are removed, and the unpacked copies are removed from the source caches of
/// registries that live in a directory (their folders start with `-`).
fn forget_earlier_verifications(verify_dir: &Path) -> Result<()> {
    // `<crate>-<version>` (a source) or `<crate>-<hash>` (a fingerprint).
    let ours = |name: &str| {
        CRATES.iter().any(|krate| {
            name.strip_prefix(krate)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|tail| tail.starts_with(|c: char| c.is_ascii_hexdigit()))
        })
    };
    // A build without its fingerprint is built again.
    let fingerprints = verify_dir.join("debug").join(".fingerprint");
    let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
        PathBuf::from,
    );
    let sources: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry").join("src"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|registry| registry.file_name().to_string_lossy().starts_with('-'))
        .map(|registry| registry.path())
        .collect();
    for dir in std::iter::once(&fingerprints).chain(&sources) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !ours(&name) {
                continue;
            }
            let path = entry.path();
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        }
    }
    Ok(())
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
