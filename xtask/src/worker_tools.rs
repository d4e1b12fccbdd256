//! The tools a Rust Worker is built and run with, installed idempotently for the tests:
//! worker-build and wasm-bindgen-cli from the crate registry into `target/worker-tools/` (debug
//! builds: several times faster to build, and their own speed does not matter), and wrangler (workerd)
//! from npm into `tests/workerd/node_modules/` as its lockfile pins it.
//!
//! `worker-build --panic-unwind` rebuilds std with unwinding on the nightly toolchain
//! (`cargo +nightly -Z build-std`), which needs nightly's `rust-src` component; it is added
//! through rustup when missing.
//!
//! worker-build would otherwise download wasm-bindgen, binaryen and esbuild from outside the
//! package registries; the tests point it at these through `WASM_BINDGEN_BIN` and
//! `ESBUILD_BIN`, and build with `--no-opt`. The optimised build of `examples/report-task`
//! (the bench, `cargo xtask size`) runs binaryen's `wasm-opt` from npm (`binaryen@132.0.0`,
//! installed into `tests/binaryen/node_modules/` by [`ensure_wasm_opt`]) through
//! `WASM_OPT_BIN`.

use std::path::Path;
use std::process::Command;

use crate::Result;
use crate::process::{npm_ci, workspace_root};

/// worker-build, matching the `worker` crate's 0.8 line.
const WORKER_BUILD: &str = "0.8.7";
/// wasm-bindgen-cli: must equal the wasm-bindgen the test Worker pins.
const WASM_BINDGEN: &str = "0.2.130";
/// Where the cargo tools go, relative to the workspace root.
pub const TOOLS_ROOT: &str = "target/worker-tools";
/// The npm package holding wrangler, relative to the workspace root.
const WORKERD_DIR: &str = "tests/workerd";
/// The npm package holding binaryen (wasm-opt), relative to the workspace root.
const BINARYEN_DIR: &str = "tests/binaryen";

/// Installs whatever is missing.
pub fn ensure() -> Result<()> {
    let root = workspace_root();
    let tools = root.join(TOOLS_ROOT);
    install_crate(&tools, "worker-build", WORKER_BUILD, "worker-build", true)?;
    install_crate(
        &tools,
        "wasm-bindgen-cli",
        WASM_BINDGEN,
        "wasm-bindgen",
        false,
    )?;
    npm_ci(&root, WORKERD_DIR)?;
    ensure_nightly_rust_src()
}

/// [`ensure`], and binaryen's `wasm-opt` for the optimised Worker build (the tests do not use
/// it).
pub fn ensure_wasm_opt() -> Result<()> {
    ensure()?;
    npm_ci(&workspace_root(), BINARYEN_DIR)
}

/// Adds nightly's `rust-src` (std's sources, for `-Z build-std`) when it is missing.
fn ensure_nightly_rust_src() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["component", "list", "--installed", "--toolchain", "nightly"])
        .output()
        .map_err(|e| format!("rustup is needed to find the nightly toolchain: {e}"))?;
    if !installed.status.success() {
        return Err(format!(
            "the nightly toolchain is missing (worker-build --panic-unwind builds std with it): {}",
            String::from_utf8_lossy(&installed.stderr).trim()
        )
        .into());
    }
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|line| line.starts_with("rust-src"))
    {
        return Ok(());
    }
    println!("xtask: rustup component add rust-src --toolchain nightly");
    let status = Command::new("rustup")
        .args(["component", "add", "rust-src", "--toolchain", "nightly"])
        .status()?;
    if !status.success() {
        return Err(format!("adding nightly's rust-src failed ({status})").into());
    }
    Ok(())
}

fn install_crate(
    tools: &Path,
    package: &str,
    version: &str,
    binary: &str,
    locked: bool,
) -> Result<()> {
    let installed = Command::new(tools.join("bin").join(binary))
        .arg("--version")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).contains(version));
    if installed {
        return Ok(());
    }
    let mut command = crate::process::cargo();
    command.args([
        "install",
        "--debug",
        "--force",
        package,
        "--version",
        version,
        "--root",
    ]);
    command.arg(tools);
    // wasm-bindgen-cli's own lockfile names a crate version the registry may lack.
    if locked {
        command.arg("--locked");
    }
    println!("xtask: installing {package} {version} into {TOOLS_ROOT}");
    let status = command.status()?;
    if !status.success() {
        return Err(format!("cargo install {package} {version} failed ({status})").into());
    }
    Ok(())
}
