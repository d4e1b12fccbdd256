//! `cargo xtask bench ...` and `cargo xtask size ...` run the benches crate (`benches/`,
//! package `durable-mcp-benches`) with the same command line. It is built in release with the
//! dependencies and features xtask has, so cargo reuses xtask's build of them and compiles only
//! that crate.

use std::process::ExitCode;

/// The benches crate's package.
const PACKAGE: &str = "durable-mcp-benches";

/// Runs the benches crate with `args` (`bench --smoke`, `size`...); its exit code is ours.
pub fn run(args: &[&str]) -> ExitCode {
    let status = xtask::process::cargo()
        .args(["run", "--quiet", "--release", "--package", PACKAGE, "--"])
        .args(args)
        .status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        // Any message is the benches' own, printed already.
        Ok(status) => {
            let code = status.code().map_or(1, |code| code.clamp(1, 255));
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(error) => {
            eprintln!("xtask: cannot run cargo: {error}");
            ExitCode::FAILURE
        }
    }
}
