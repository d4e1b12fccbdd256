//! `cargo xtask browser`: the story-demo page (`examples/story-demo/web`) in headless
//! Chromium, against both hosts of `examples/story-demo`.
//!
//! 1. Chromium: `/usr/bin/chromium` (or `$CHROMIUM`); when the default is missing it is
//!    installed with `apt-get install -y chromium` (after an `apt-get update` only if the
//!    first attempt fails).
//! 2. The test's npm packages (`tests/browser`, playwright-core pinned by its lockfile), with
//!    `npm ci` when `node_modules` is missing or was installed from another lockfile (the
//!    helper `cargo xtask clients` uses).
//! 3. The native host: `cargo build -p story-demo`, the `story-demo` binary started as every
//!    native host here is (see `xtask::server`; it supervises a child host, which exits with
//!    it); the test `tests/browser/story-demo.mjs` runs against it.
//! 4. The Worker: `examples/story-demo` built with worker-build and run under `wrangler dev`
//!    (see the `worker_target` module), and the same test against it.
//!
//! Each host is started with the task inspector on (`DURABLE_MCP_INSPECTOR_TOKEN`), and after the story-demo test `tests/browser/inspector.mjs`
//! drives the inspector's page against it.
//!
//! Screenshots go to `target/browser/story-demo-native.png`, `story-demo-worker.png`,
//! `inspector-native.png` and `inspector-worker.png`, the native host's log beside them. Both
//! hosts are tried even if the first fails; the command prints a summary table and fails naming
//! each host that failed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xtask::Result;
use xtask::process::{Profile, build_binary, npm_ci, run_with_limit, target_dir, workspace_root};
use xtask::server::NativeServer;

/// The browser test's npm project, relative to the workspace root.
const BROWSER_DIR: &str = "tests/browser";

/// The test scripts, relative to [`BROWSER_DIR`]: the story demo's page, the inspector's.
const SCRIPT: &str = "story-demo.mjs";
const INSPECTOR_SCRIPT: &str = "inspector.mjs";

/// The inspector's token on both hosts.
const INSPECTOR_TOKEN: &str = "browser-test-inspector-token-0123";

/// The story-demo example: its package (and binary) name and its directory.
const PACKAGE: &str = "story-demo";
const EXAMPLE_DIR: &str = "examples/story-demo";

/// Chromium where Debian's package puts it; `$CHROMIUM` overrides it.
const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// The longest one run of the test may take (it gives up by itself after 180 s).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

/// What the test did against one host.
struct Outcome {
    /// `native` or `worker`.
    host: &'static str,
    /// The test's summary line, or why it (or the host) failed.
    result: Result<String, String>,
    /// How long the host's part took, build and start included.
    elapsed: Duration,
}

/// Runs the browser test against the native host, then the Worker; prints a summary table;
/// fails naming each host whose run failed.
pub fn run() -> Result<()> {
    let root = workspace_root();
    let out = target_dir(&root).join("browser");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let chromium = ensure_chromium()?;
    npm_ci(&root, BROWSER_DIR)?;

    let mut outcomes = Vec::new();
    let started = Instant::now();
    let result = native(&root, &out, &chromium).map_err(|e| e.to_string());
    report("native", &result);
    outcomes.push(Outcome {
        host: "native",
        result,
        elapsed: started.elapsed(),
    });

    let started = Instant::now();
    let result = worker(&root, &out, &chromium).map_err(|e| e.to_string());
    report("worker", &result);
    outcomes.push(Outcome {
        host: "worker",
        result,
        elapsed: started.elapsed(),
    });

    println!("\nxtask browser: summary");
    println!("  {:<8} {:<6} {:>8}  detail", "host", "result", "time");
    for outcome in &outcomes {
        let (word, detail) = match &outcome.result {
            Ok(line) => ("ok", line.clone()),
            Err(error) => ("FAIL", error.lines().next().unwrap_or("").to_owned()),
        };
        println!(
            "  {:<8} {:<6} {:>7.1}s  {detail}",
            outcome.host,
            word,
            outcome.elapsed.as_secs_f64()
        );
    }
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|outcome| outcome.result.is_err())
        .map(|outcome| outcome.host)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the browser tests (story demo, inspector) failed on: {}",
            failed.join(", ")
        )
        .into())
    }
}

/// Prints one host's outcome in full.
fn report(host: &str, result: &Result<String, String>) {
    match result {
        Ok(line) => say(format_args!("ok   {host}: {line}")),
        Err(error) => say(format_args!("FAIL {host}: {error}")),
    }
}

/// Prints one progress line.
fn say(message: std::fmt::Arguments<'_>) {
    println!("xtask browser: {message}");
}

/// The Chromium to drive: `$CHROMIUM` if set (which must exist), else `/usr/bin/chromium`,
/// installed from Debian's packages when missing.
fn ensure_chromium() -> Result<PathBuf> {
    if let Some(given) = std::env::var_os("CHROMIUM").filter(|given| !given.is_empty()) {
        let given = PathBuf::from(given);
        if !given.is_file() {
            return Err(format!("CHROMIUM names {}, which is not a file", given.display()).into());
        }
        return Ok(given);
    }
    let chromium = PathBuf::from(DEFAULT_CHROMIUM);
    if chromium.is_file() {
        return Ok(chromium);
    }
    say(format_args!(
        "{DEFAULT_CHROMIUM} is missing: apt-get install -y chromium"
    ));
    if !apt_get(&["install", "-y", "chromium"])? {
        say(format_args!(
            "the install failed; apt-get update, then the install again"
        ));
        if !apt_get(&["update"])? || !apt_get(&["install", "-y", "chromium"])? {
            return Err(
                "apt-get could not install chromium (set CHROMIUM to a Chromium to use instead)"
                    .into(),
            );
        }
    }
    if chromium.is_file() {
        Ok(chromium)
    } else {
        Err(format!("apt-get installed chromium, but {DEFAULT_CHROMIUM} is still missing").into())
    }
}

/// Runs `apt-get` with `args`, non-interactively; true if it succeeded.
fn apt_get(args: &[&str]) -> Result<bool> {
    let status = Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run apt-get (to install chromium): {e}"))?;
    Ok(status.success())
}

/// Builds and starts the native host, runs the test against it, stops it.
fn native(root: &Path, out: &Path, chromium: &Path) -> Result<String> {
    let binary = build_binary(PACKAGE, Profile::Debug)?;
    let token = [("DURABLE_MCP_INSPECTOR_TOKEN", INSPECTOR_TOKEN)];
    let host = NativeServer::start(&binary, &token, Some(&out.join("native-host.log")))?;
    let base_url = base_url(host.url())?;
    say(format_args!("native host at {base_url}"));
    let outcome = run_both(root, &base_url, out, "native", chromium);
    let exited = host.stop();
    let line = outcome?;
    match exited {
        // It should have run until told to stop.
        Some(status) => Err(format!("the native host exited during the test ({status})").into()),
        None => Ok(line),
    }
}

/// Builds and starts the Worker, runs the test against it; the Worker stops when dropped.
fn worker(root: &Path, out: &Path, chromium: &Path) -> Result<String> {
    xtask::worker_tools::ensure()?;
    let token = [("DURABLE_MCP_INSPECTOR_TOKEN", INSPECTOR_TOKEN)];
    let worker = xtask::worker_target::start_with_vars(root, EXAMPLE_DIR, &token)?;
    let base_url = base_url(&worker.mcp_url())?;
    say(format_args!("Worker at {base_url}"));
    run_both(root, &base_url, out, "worker", chromium)
}

/// The page's base URL: the MCP endpoint's without `/mcp`.
fn base_url(mcp_url: &str) -> Result<String> {
    let base = mcp_url.strip_suffix("/mcp");
    let base = base.ok_or_else(|| format!("the MCP URL {mcp_url} does not end in /mcp"))?;
    Ok(base.to_owned())
}

/// Runs the story-demo test, then the inspector's, against `base_url` (the `host` named);
/// both summary lines if both passed.
fn run_both(
    root: &Path,
    base_url: &str,
    out: &Path,
    host: &str,
    chromium: &Path,
) -> Result<String> {
    let story = out.join(format!("story-demo-{host}.png"));
    let story = run_script(root, SCRIPT, base_url, &story, chromium)?;
    let inspector = out.join(format!("inspector-{host}.png"));
    let inspector = run_script(root, INSPECTOR_SCRIPT, base_url, &inspector, chromium)?;
    Ok(format!("{story}; {inspector}"))
}

/// Runs the test `script` against `base_url`; its summary line if it passed.
fn run_script(
    root: &Path,
    script: &str,
    base_url: &str,
    screenshot: &Path,
    chromium: &Path,
) -> Result<String> {
    let mut command = Command::new("node");
    command
        .current_dir(root.join(BROWSER_DIR))
        .arg(script)
        .env("BASE_URL", base_url)
        .env("SCREENSHOT", screenshot)
        .env("CHROMIUM", chromium)
        .env("TOKEN", INSPECTOR_TOKEN)
        .env("INSPECTOR_PATH", durable_mcp::http::INSPECTOR_PATH);
    let run = run_with_limit(&mut command, SCRIPT_TIMEOUT)?;
    if run.succeeded() {
        let line = run.stdout.lines().last().unwrap_or("").trim().to_owned();
        return Ok(line);
    }
    Err(format!(
        "node {BROWSER_DIR}/{script} ({}):\n{}",
        run.status_text(),
        run.transcript()
    )
    .into())
}
