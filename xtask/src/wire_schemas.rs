//! The upstream JSON Schemas the black-box suite validates wire messages against
//! (`tests/tests/blackbox/schema.rs`), made from pinned npm packages by
//! `tests/wire-schemas/generate.mjs` into `wire-schemas/` of the target directory.
//!
//! The packages are pinned by `tests/wire-schemas/package-lock.json` and installed with
//! `npm ci` when `node_modules` is missing or was installed from another lockfile (see
//! `xtask::process::npm_ci`); the generator runs on the machine's Node, as the client drivers do.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use xtask::Result;
use xtask::process::{npm_ci, target_dir, workspace_root};

/// The generator's npm project, relative to the workspace root.
const PROJECT: &str = "tests/wire-schemas";

/// The folder the schemas go to, relative to the target directory (where the suite looks
/// when `DURABLE_MCP_SCHEMAS` is not set).
const OUTPUT: &str = "wire-schemas";

/// Installs the generator's packages if needed and writes the schemas; returns their folder,
/// for `DURABLE_MCP_SCHEMAS`.
pub fn ensure() -> Result<PathBuf> {
    let root = workspace_root();
    npm_ci(&root, PROJECT)?;
    let out = target_dir(&root).join(OUTPUT);
    // Written anew each time (under a second), so they always follow the lockfile and the
    // script.
    let script = format!("{PROJECT}/generate.mjs");
    println!("xtask: node {script} {}", out.display());
    let status = Command::new("node")
        .current_dir(&root)
        .arg(&script)
        .arg(&out)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run node (Node.js 20 or later is needed): {e}"))?;
    if !status.success() {
        return Err(format!("node {script} {} failed ({status})", out.display()).into());
    }
    Ok(out)
}
