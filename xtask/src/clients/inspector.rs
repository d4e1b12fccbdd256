//! The inspector CLI (`@modelcontextprotocol/inspector`, on Node 22) calling tools in the
//! modern era and in its default era for a URL (the 2025 handshake).

use std::time::Duration;

use serde_json::Value;
use xtask::Result;
use xtask::process::{Run, run_with_limit};

use super::npx::Npx;

/// The inspector, pinned.
pub(super) const PACKAGE: &str = "@modelcontextprotocol/inspector@2.12.0";

/// The longest one inspector run may take.
const INSPECTOR_TIMEOUT: Duration = Duration::from_secs(120);

/// The inspector's exit code for a tool result with `isError: true`.
const INSPECTOR_TOOL_ERROR_EXIT: i32 = 5;

/// The protocol era the inspector CLI speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Era {
    /// `--protocol-era modern`: 2026-07-28, `server/discover`, no fallback.
    Modern,
    /// No `--protocol-era`: the CLI's default for a URL target, the 2025 `initialize`
    /// handshake (it calls a tool whose `taskSupport` is `optional` as a plain tool).
    Default,
}

/// The inspector CLI calling `tool` in `era`, with its home in a throwaway directory (it
/// writes state there).
fn inspector(npx: &Npx, url: &str, era: Era, tool: &str, arguments: &str) -> Result<Run> {
    let home = tempfile::tempdir()?;
    let mut command = npx.command("mcp-inspector");
    command
        .env("HOME", home.path())
        .args(["--cli", url, "--transport", "http"]);
    if era == Era::Modern {
        command.args(["--protocol-era", "modern"]);
    }
    command
        .args(["--method", "tools/call", "--tool-name", tool])
        .args(["--tool-args-json", arguments, "--format", "json"]);
    run_with_limit(&mut command, INSPECTOR_TIMEOUT)
}

/// `slow_compute` through the inspector in `era`: exit 0 and a completed result with
/// content. The modern era prints it with `resultType: "complete"`; the default era prints
/// the 2025 `CallToolResult` (no `resultType`), which must not be a task (`task`).
pub(super) fn completes(npx: &Npx, url: &str, era: Era) -> Result<String> {
    let run = inspector(npx, url, era, "slow_compute", r#"{"seconds":1}"#)?;
    if !run.succeeded() {
        return Err(format!(
            "{}, expected exit 0\n{}",
            run.status_text(),
            run.transcript()
        )
        .into());
    }
    let printed: Value = serde_json::from_str(run.stdout.trim()).map_err(|e| {
        format!(
            "stdout is not one JSON document ({e})\n{}",
            run.transcript()
        )
    })?;
    let result = &printed["result"];
    let content = result["content"]
        .as_array()
        .filter(|content| !content.is_empty());
    let completed = match era {
        Era::Modern => result["resultType"] == "complete",
        Era::Default => {
            result.get("task").is_none()
                && result
                    .get("resultType")
                    .is_none_or(|kind| kind == "complete")
        }
    };
    let expected = match era {
        Era::Modern => r#"{"result":{"resultType":"complete","content":[…]}}"#,
        Era::Default => r#"{"result":{"content":[…]}} (not a task)"#,
    };
    match content {
        Some(content) if completed && result["isError"] != true => Ok(format!(
            "exit 0, completed result with {} content block(s): {} ({:.1?})",
            content.len(),
            serde_json::to_string(content)?,
            run.elapsed
        )),
        _ => Err(format!(
            "expected {expected} without isError, got {}",
            run.stdout.trim()
        )
        .into()),
    }
}

/// `failing_job` through the inspector: a tool error, which the inspector reports as exit 5.
pub(super) fn tool_error(npx: &Npx, url: &str) -> Result<String> {
    let run = inspector(npx, url, Era::Modern, "failing_job", "{}")?;
    match run.status.and_then(|status| status.code()) {
        Some(INSPECTOR_TOOL_ERROR_EXIT) => Ok(format!(
            "exit {INSPECTOR_TOOL_ERROR_EXIT} (tool error) ({:.1?})",
            run.elapsed
        )),
        _ => Err(format!(
            "{}, expected exit {INSPECTOR_TOOL_ERROR_EXIT} (a tool error)\n{}",
            run.status_text(),
            run.transcript()
        )
        .into()),
    }
}
