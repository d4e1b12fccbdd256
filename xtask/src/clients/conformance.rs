//! The official conformance suite (`@modelcontextprotocol/conformance`, on Node 22): one
//! `tasks-*` scenario at a time, and every scenario a protocol revision requires against its
//! baseline of expected failures. Results go under `target/conformance/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use xtask::Result;
use xtask::process::{run_with_limit, workspace_root};

use super::npx::Npx;
use super::record;

/// The conformance suite, pinned: its scenarios and check IDs change between prereleases.
pub(super) const PACKAGE: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";

/// The conformance suite's scenarios for the Tasks extension; each must pass on its own.
const TASK_SCENARIOS: [&str; 10] = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// A protocol revision whose required scenarios the suite runs, and the baseline of the
/// scenarios (or checks) known to fail on it.
struct Requirements {
    /// The revision, as `--requirements` takes it.
    revision: &'static str,
    /// The expected-failures file, relative to the workspace root.
    baseline: &'static str,
}

/// The 2026-07-28 revision (stateless, `server/discover`, the Tasks extension).
const REQUIREMENTS_2026: Requirements = Requirements {
    revision: "2026-07-28",
    baseline: "tests/conformance/expected-failures.yml",
};

/// The 2025-11-25 revision (the `initialize` handshake, experimental core tasks).
const REQUIREMENTS_2025: Requirements = Requirements {
    revision: "2025-11-25",
    baseline: "tests/conformance/expected-failures-2025-11-25.yml",
};

/// The longest one conformance scenario may take (the suite's own limit is 30 s).
const CONFORMANCE_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest the run of every scenario a revision requires may take (about 50 scenarios
/// at 2026-07-28, 33 at 2025-11-25; 10 s and 3 s when they pass).
const REQUIREMENTS_TIMEOUT: Duration = Duration::from_secs(900);

/// Runs every `tasks-*` scenario on its own, then the requirements of both revisions against
/// their baselines, against `url`; results go under `out`, checks are named with `host`
/// appended.
pub(super) fn run_all(failed: &mut Vec<String>, npx: &Npx, url: &str, out: &Path, host: &str) {
    for name in TASK_SCENARIOS {
        let outcome = scenario(npx, url, name, out);
        record(failed, format!("conformance {name}{host}"), outcome);
    }
    for revision in [&REQUIREMENTS_2026, &REQUIREMENTS_2025] {
        let outcome = requirements(npx, url, revision, out);
        let name = format!("conformance --requirements {}{host}", revision.revision);
        record(failed, name, outcome);
    }
}

/// Runs one conformance scenario; it passes if the suite exits 0.
fn scenario(npx: &Npx, url: &str, scenario: &str, out: &Path) -> Result<String> {
    let dir = fresh_dir(&out.join(scenario))?;
    let mut command = npx.command("conformance");
    command
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(&dir);
    let run = run_with_limit(&mut command, CONFORMANCE_TIMEOUT)?;
    let summary = last_line_starting(&run.stdout, "Passed:").unwrap_or("no summary line");
    if run.succeeded() {
        return Ok(format!("{summary} ({:.1?})", run.elapsed));
    }
    Err(format!(
        "{}; {summary}\n{}\n{}",
        run.status_text(),
        failing_checks(&dir),
        run.transcript()
    )
    .into())
}

/// Runs every scenario `requirements.revision` requires against its expected-failures
/// baseline; it passes if the suite exits 0 (no unexpected failure, no stale baseline entry).
fn requirements(npx: &Npx, url: &str, requirements: &Requirements, out: &Path) -> Result<String> {
    let Requirements { revision, baseline } = requirements;
    let file = workspace_root().join(baseline);
    if !file.is_file() {
        return Err(format!("the baseline {baseline} is missing").into());
    }
    let dir = fresh_dir(&out.join(format!("requirements-{revision}")))?;
    let mut command = npx.command("conformance");
    command
        .args(["server", "--url", url, "--requirements", revision])
        .arg("--expected-failures")
        .arg(&file)
        .arg("-o")
        .arg(&dir);
    let run = run_with_limit(&mut command, REQUIREMENTS_TIMEOUT)?;
    let total = last_line_starting(&run.stdout, "Total:").unwrap_or("no total line");
    if run.succeeded() {
        return Ok(format!(
            "{total}; every failure is in {baseline} ({:.1?})",
            run.elapsed
        ));
    }
    // The verdict against the baseline is the tail of the output, from the first section on.
    let verdict = ["Expected failures", "Stale baseline", "Unexpected failures"]
        .iter()
        .filter_map(|heading| run.stdout.find(heading))
        .min()
        .map_or(run.stdout.as_str(), |at| &run.stdout[at..]);
    Err(format!(
        "{} against {baseline}; {total}\n{}\n{}\nstderr:\n{}",
        run.status_text(),
        failing_checks(&dir),
        verdict.trim_end(),
        run.stderr.trim_end()
    )
    .into())
}

/// Removes and recreates `dir`, so it holds only the results of the coming run.
fn fresh_dir(dir: &Path) -> Result<PathBuf> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir.to_path_buf())
}

/// The last line of `text` that starts with `prefix`, leading spaces aside.
fn last_line_starting<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines()
        .map(str::trim_start)
        .rfind(|line| line.starts_with(prefix))
}

/// The checks that did not succeed, from each `checks.json` the suite wrote under `dir`.
fn failing_checks(dir: &Path) -> String {
    let mut lines = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let file = entry.path().join("checks.json");
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        let Ok(Value::Array(checks)) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        for check in checks {
            let status = check["status"].as_str().unwrap_or("?");
            if status == "FAILURE" || status == "WARNING" {
                lines.push(format!(
                    "  {status} {}: {}",
                    check["id"].as_str().unwrap_or("?"),
                    check["errorMessage"].as_str().unwrap_or("")
                ));
            }
        }
    }
    if lines.is_empty() {
        "no failing check recorded".to_owned()
    } else {
        format!("failing checks:\n{}", lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::last_line_starting;

    /// The suite's summary line is found, the last one winning.
    #[test]
    fn the_last_summary_line_is_found() {
        let text = "Passed: 1/2\nChecks:\n  Passed: 9/9, 0 failed\nTotal: 3";
        assert_eq!(
            last_line_starting(text, "Passed:"),
            Some("Passed: 9/9, 0 failed")
        );
        assert_eq!(last_line_starting(text, "Missing:"), None);
    }
}
