//! The runner of the fuzz targets (`fuzz_*.rs`): property tests on stable Rust, so they run in
//! `cargo test`. Each target runs a bounded number of cases by default; `PROPTEST_CASES`
//! overrides it for long runs (`cargo xtask fuzz --cases N`). Every target reports, on stderr,
//! one line that `cargo xtask fuzz` reads:
//!
//! ```text
//! fuzz-target <name>: <executions> executions in <milliseconds> ms
//! ```
//!
//! Executions count every call of the test body, the cases proptest shrinks a failure
//! through included. A failing case is saved under `tests/proptest-regressions/` and replayed
//! first on the next run; commit those files.
#![allow(dead_code)]

use std::cell::Cell;
use std::time::Instant;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};

/// The number of cases: `PROPTEST_CASES` divided by `divisor` (at least 1) if set, else
/// `default`. A target whose case costs a database file divides a long run's count.
pub fn cases(default: u32, divisor: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse::<u32>().ok())
        .map_or(default, |cases| (cases / divisor.max(1)).max(1))
}

/// Runs the target `name`: `test` on values of `strategy`, `cases(default_cases, 1)` times.
/// Panics with the minimal failing value if a case fails (a panic in `test` is a failure).
pub fn run<S: Strategy>(
    name: &str,
    source_file: &'static str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    run_with(name, source_file, cases(default_cases, 1), strategy, test);
}

/// Runs the target `name`: `test` on values of `strategy`, `cases` times.
pub fn run_with<S: Strategy>(
    name: &str,
    source_file: &'static str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases,
        source_file: Some(source_file),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // A long run must not stop at the rejection budget: strategies here never reject.
        max_global_rejects: u32::MAX,
        ..Config::default()
    };
    let executions = Cell::new(0u64);
    let started = Instant::now();
    let outcome = TestRunner::new(config).run(&strategy, |value| {
        executions.set(executions.get() + 1);
        test(value)
    });
    eprintln!(
        "fuzz-target {name}: {} executions in {} ms",
        executions.get(),
        started.elapsed().as_millis()
    );
    if let Err(failure) = outcome {
        panic!("fuzz target {name} failed: {failure}");
    }
}

/// Runs `target` on a thread with a 64 MiB stack: the nested strategies of a target and the
/// router's futures, unoptimised, overflow the 2 MiB of a test thread.
pub fn on_a_large_stack(target: impl FnOnce() + Send + 'static) {
    let thread = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(target)
        .expect("a thread for the fuzz target");
    if let Err(panic) = thread.join() {
        std::panic::resume_unwind(panic);
    }
}
