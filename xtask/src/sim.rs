//! `cargo xtask sim --seeds N [--seed S]`: the deterministic simulation (`tests/sim`) over
//! many seeds, built in release.
//!
//! Runs seeds `S..S+N` (S defaults to 0) and prints the seeds run, events, store writes,
//! faults injected, restarts and violations, each failing seed with its minimal event list.
//! Fails if any seed violated an invariant. `DURABLE_MCP_SIM_SEED=<seed>` replays one seed.

use std::process::Command;

use xtask::Result;
use xtask::process::{cargo, target_dir, workspace_root};

/// Builds and runs the simulator with `args` (`--seeds N`, `--seed S`, `--reports R`: how
/// many failing seeds to print, `--without LIST`: constructs left out of the grammar).
pub fn run(args: &[&str]) -> Result<()> {
    let mut forwarded = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--seeds" | "--seed" | "--reports" => {
                let value = rest
                    .next()
                    .filter(|v| v.parse::<u64>().is_ok())
                    .ok_or_else(|| format!("{arg} takes a number, as in `{arg} 1000`"))?;
                forwarded.extend([arg.to_string(), value.to_string()]);
            }
            "--without" => {
                let value = rest.next().ok_or(
                    "--without takes a list of constructs, as in `--without joins,nested`",
                )?;
                forwarded.extend([arg.to_string(), value.to_string()]);
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: cargo xtask sim --seeds N [--seed S] \
                     [--reports R] [--without explicit,nested,joins,far,offers]"
                )
                .into());
            }
        }
    }
    let root = workspace_root();
    let built = cargo()
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "--package",
            "durable-mcp-sim",
            "--bin",
            "sim",
        ])
        .status()
        .map_err(|e| format!("cargo build of the simulator: {e}"))?;
    if !built.success() {
        return Err(format!("building the simulator failed ({built})").into());
    }
    let binary = target_dir(&root).join("release").join("sim");
    let status = Command::new(&binary)
        .args(&forwarded)
        .status()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    if !status.success() {
        return Err("the simulation found violations (see above)".into());
    }
    Ok(())
}
