//! `cargo xtask smoke`, run by `cargo xtask test` after `clients`: each xtask command that the
//! test command does not otherwise run (`size`, `bench`, `sim`, `fuzz`), once, with tiny
//! counts, so that a change that breaks one of them fails the test command instead of waiting
//! for the next person to run it.
//!
//! A smoke run fails only if its command does (a build, a request, a crash); it judges no
//! target. Each runs as its own process, `xtask <command> <args>`, as a person would run it.
//! They reuse what the test command built before them: the debug fixture server, the Worker
//! builds in `target/workers`, the debug test binaries (`fuzz --debug`), and this release
//! executable (the simulator adds only its own crate in release).

use std::process::Command;
use std::time::{Duration, Instant};

use xtask::Result;

/// The commands run, in order: `size` before `bench`, so that the build of report-task left
/// behind is the tests' (no wasm-opt), which `bench --smoke` makes last.
const RUNS: [&[&str]; 4] = [
    &["size", "--smoke"],
    &["bench", "--smoke"],
    &["sim", "--seeds", "20"],
    &["fuzz", "--cases", "50", "--debug"],
];

/// Runs every smoke run, even after one failed; fails at the end naming each that failed.
pub fn run() -> Result<()> {
    let exe = std::env::current_exe()?;
    let started = Instant::now();
    let mut failed = Vec::new();
    let mut took = Vec::new();
    for args in RUNS {
        let shown = format!("cargo xtask {}", args.join(" "));
        println!("xtask smoke: {shown}: a smoke run, tiny counts; no target is judged");
        let began = Instant::now();
        let status = Command::new(&exe).args(args).status();
        took.push((shown.clone(), began.elapsed()));
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => failed.push(format!("`{shown}` ({status})")),
            Err(error) => failed.push(format!("`{shown}` (could not start: {error})")),
        }
    }
    print_times(&took, started.elapsed());
    if failed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "smoke runs failed: {}; run each alone to see its output, and fix the command (a smoke \
         run judges no target, so the command itself broke)",
        failed.join(", ")
    )
    .into())
}

/// One line per run with its time, then the total.
fn print_times(took: &[(String, Duration)], total: Duration) {
    for (shown, elapsed) in took {
        println!("xtask smoke: {shown} took {:.0} s", elapsed.as_secs_f64());
    }
    println!("xtask smoke: {:.0} s in all", total.as_secs_f64());
}
