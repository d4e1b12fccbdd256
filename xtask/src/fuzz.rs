//! `cargo xtask fuzz [--cases N]`: the fuzz targets (property tests, see
//! `tests/tests/fuzzing/mod.rs`) run long, in release: `N` cases each (default 100,000) through
//! `PROPTEST_CASES`, except `sqlite-rows`, whose case costs a database file: it runs `N / 20`.
//! `cargo test` runs the same targets with a bounded number of cases.
//!
//! Prints, per target, the executions (every call of the test body, the shrinking of a failure
//! included) and the time, as each target reported them on stderr. Fails if any target found
//! a failing case; proptest saves it beside the target (`*.proptest-regressions`), to commit
//! with the fix.
//!
//! `--debug` builds the targets as `cargo test --workspace --all-features` does instead, so that
//! a few cases reuse that build: the smoke run of `cargo xtask test` (see the `smoke` module).

use std::time::Instant;

use xtask::Result;
use xtask::process::{cargo, workspace_root};

/// The test binaries holding fuzz targets: package, cargo's selection, test name filter.
const SUITES: &[(&str, &[&str], &str)] = &[
    (
        "durable-mcp-tests",
        &[
            "--test",
            "fuzz_router",
            "--test",
            "fuzz_duration",
            "--test",
            "fuzz_store",
            "--test",
            "fuzz_auth",
        ],
        "",
    ),
    ("durable-mcp-macros", &["--lib"], "fuzz::"),
];

/// The usage, for errors.
const USAGE: &str = "usage: cargo xtask fuzz [--cases N] [--debug]";

/// What the command line asks for.
struct Options {
    /// Cases per target.
    cases: u64,
    /// Whether to build as `cargo test --workspace --all-features` does, not in release.
    debug: bool,
}

impl Options {
    fn parse(args: &[&str]) -> Result<Options> {
        let mut options = Options {
            cases: 100_000,
            debug: false,
        };
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            match *arg {
                "--cases" => {
                    let n = rest.next().ok_or(USAGE)?;
                    options.cases = n.parse().map_err(|_| {
                        format!("--cases takes a number, as in `--cases 20000`, not {n:?}")
                    })?;
                }
                "--debug" => options.debug = true,
                _ => return Err(format!("unknown argument {arg:?}; {USAGE}").into()),
            }
        }
        Ok(options)
    }

    /// cargo's arguments before the package and target selection.
    fn cargo_args(&self, package: &str) -> Vec<String> {
        let mut args = vec!["test".to_owned()];
        if self.debug {
            // The whole workspace's features, as the test command has them, so that cargo
            // finds that build fresh instead of building the package again with its own. With
            // `--lib`, every library's tests run; only the macros' match the filter.
            args.extend(["--workspace", "--all-features"].map(String::from));
        } else {
            args.extend(["--release", "--package", package].map(String::from));
        }
        args
    }
}

/// Runs every fuzz target with `--cases N` (default 100,000) and prints what each executed.
pub fn run(args: &[&str]) -> Result<()> {
    let options = Options::parse(args)?;
    let cases = options.cases;
    let root = workspace_root();
    let mut reports = Vec::new();
    let mut failed = Vec::new();
    let started = Instant::now();
    for (package, selection, filter) in SUITES {
        println!(
            "fuzz: {package} {}, {cases} cases per target{}",
            selection.join(" "),
            if options.debug { " (debug build)" } else { "" }
        );
        let mut command = cargo();
        command
            .current_dir(&root)
            .env("PROPTEST_CASES", cases.to_string())
            .args(options.cargo_args(package))
            .args(*selection)
            .arg("--");
        if !filter.is_empty() {
            command.arg(filter);
        }
        let output = command
            .args(["--nocapture", "--test-threads", "2"])
            .output()
            .map_err(|e| format!("cargo test: {e}"))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        reports.extend(stderr.lines().filter_map(parse_report));
        if !output.status.success() {
            eprintln!("{stderr}");
            eprintln!("{}", String::from_utf8_lossy(&output.stdout));
            failed.push(*package);
        }
    }
    println!();
    println!(
        "{:<24} {:>12} {:>10} {:>12}",
        "target", "executions", "seconds", "per second"
    );
    for (name, executions, millis) in &reports {
        let rate = *executions as f64 / (*millis as f64 / 1000.0).max(0.001);
        println!(
            "{name:<24} {executions:>12} {:>10.1} {rate:>12.0}",
            *millis as f64 / 1000.0
        );
    }
    println!(
        "{} targets, {} executions, {:.0} s in all (builds included)",
        reports.len(),
        reports.iter().map(|r| r.1).sum::<u64>(),
        started.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        return Err(format!("fuzz targets failed in {} (see above)", failed.join(", ")).into());
    }
    Ok(())
}

/// `fuzz-target <name>: <executions> executions in <ms> ms`.
fn parse_report(line: &str) -> Option<(String, u64, u64)> {
    let rest = line.strip_prefix("fuzz-target ")?;
    let (name, rest) = rest.split_once(": ")?;
    let (executions, rest) = rest.split_once(" executions in ")?;
    let millis = rest.strip_suffix(" ms")?;
    Some((
        name.to_owned(),
        executions.parse().ok()?,
        millis.parse().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_report_line_is_read() {
        assert_eq!(
            super::parse_report("fuzz-target router: 1500 executions in 7012 ms"),
            Some(("router".to_owned(), 1500, 7012))
        );
        assert_eq!(super::parse_report("test router ... ok"), None);
    }
}
