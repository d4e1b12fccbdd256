//! Bad settings stop `report-task` at start with a message naming the variable, before it
//! listens or touches its state.
//!
//! (Being an integration test of this package also makes `cargo test --workspace` build the
//! binary, which the end-to-end tests in `tests/tests/report_task.rs` run as a child.)

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary with `env` and returns what it printed; panics if it is still running
/// after 30 s (it started serving instead of refusing).
fn run(env: &[(&str, &str)]) -> Output {
    let state = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_report-task"))
        .env("PORT", "0")
        .env("DURABLE_MCP_DATA", state.path())
        .env_remove("REPORT_API_URL")
        .env_remove("REPORT_COOL_OFF")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start report-task");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("poll report-task").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("report-task started with {env:?} instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("report-task's output")
}

fn assert_refused(env: &[(&str, &str)], expected: &[&str]) {
    let output = run(env);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{env:?} was accepted");
    for needle in expected {
        assert!(
            stderr.contains(needle),
            "{env:?}: {needle:?} not in {stderr:?}"
        );
    }
    assert!(output.stdout.is_empty(), "it never served: {output:?}");
}

#[test]
fn a_malformed_cool_off_is_refused() {
    assert_refused(
        &[("REPORT_COOL_OFF", "five seconds")],
        &["REPORT_COOL_OFF", "five seconds"],
    );
}

#[test]
fn a_report_api_url_that_is_not_plain_http_is_refused() {
    assert_refused(
        &[("REPORT_API_URL", "https://reports.example")],
        &["REPORT_API_URL", "http://"],
    );
    assert_refused(
        &[("REPORT_API_URL", "not a url")],
        &["REPORT_API_URL", "not a URL"],
    );
}
