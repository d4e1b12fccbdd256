//! `cargo xtask browser`: the story-demo page (`examples/story-demo/web`) in headless
//! Chromium, against both hosts of `examples/story-demo`.
//!
//! 1. Chromium: `/usr/bin/chromium` (or `$CHROMIUM`); when the default is missing it is
//!    installed with `apt-get install -y chromium` (after an `apt-get update` only if the
//!    first attempt fails).
//! 2. The test's npm packages (`tests/browser`, playwright-core pinned by its lockfile), with
//!    `npm ci` when `node_modules` is missing or was installed from another lockfile (the
//!    helper `cargo xtask clients` uses).
//! 3. The native host: `cargo build -p story-demo`, the `story-demo` binary started on a free
//!    port of 127.0.0.1 (`PORT`) with a fresh data directory (`DURABLE_MCP_DATA`) in a process
//!    group of its own (it supervises a child host), ready once `GET /demo/host` answers; the
//!    test `tests/browser/story-demo.mjs` runs against it; then the group gets SIGTERM (and
//!    SIGKILL if it lingers).
//! 4. The Worker: `examples/story-demo` built with worker-build and run under `wrangler dev`
//!    (see the `worker_target` module), and the same test against it.
//!
//! Each host is started with the task inspector on (natively `DURABLE_MCP_INSPECTOR_TOKEN`, on
//! the Worker `DURABLE_MCP_ADMIN_TOKEN`), and after the story-demo test `tests/browser/inspector.mjs`
//! drives the inspector's page against it.
//!
//! Screenshots go to `target/browser/story-demo-native.png`, `story-demo-worker.png`,
//! `inspector-native.png` and `inspector-worker.png`, the hosts' logs beside them. Both hosts are tried even if the first fails; the command
//! prints a summary table and fails naming each host that failed. [`run`] is public to the
//! crate so other commands (the CI checks) can run it too.

use std::error::Error;
use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::clients::{Run, build_binary, npm_ci, run_with_limit, target_dir, workspace_root};

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

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

/// How long the native host may take to answer `GET /demo/host`.
const HOST_START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the host may take to exit after SIGTERM before it gets SIGKILL.
const HOST_STOP_TIMEOUT: Duration = Duration::from_secs(10);

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
    let binary = build_binary(root, PACKAGE)?;
    let data = tempfile::tempdir()?;
    let log = out.join("native-host.log");
    let host = NativeHost::start(&binary, data.path(), &log)?;
    say(format_args!("native host at {}", host.base_url));
    let outcome = run_both(root, &host.base_url, out, "native", chromium);
    let stopped = host.stop();
    let line = outcome?;
    stopped?;
    Ok(line)
}

/// Builds and starts the Worker, runs the test against it; the Worker stops when dropped.
fn worker(root: &Path, out: &Path, chromium: &Path) -> Result<String> {
    crate::worker_tools::ensure()?;
    let token = [("DURABLE_MCP_ADMIN_TOKEN", INSPECTOR_TOKEN)];
    let worker = crate::worker_target::start_with_vars(root, EXAMPLE_DIR, &token)?;
    let mcp_url = worker.mcp_url();
    let base_url = mcp_url
        .strip_suffix("/mcp")
        .ok_or_else(|| format!("the Worker's MCP URL {mcp_url} does not end in /mcp"))?
        .to_owned();
    say(format_args!("Worker at {base_url}"));
    run_both(root, &base_url, out, "worker", chromium)
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
        .env("INSPECTOR_PATH", durable_mcp::INSPECTOR_PATH);
    let run: Run = run_with_limit(&mut command, SCRIPT_TIMEOUT)?;
    if run.status.is_some_and(|status| status.success()) {
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

/// The native story-demo host: a supervisor and the host it spawns, in a process group of
/// their own; stopped (the whole group) when stopped or dropped.
struct NativeHost {
    /// The supervisor, leader of the group.
    child: Option<Child>,
    /// `http://127.0.0.1:<port>`.
    base_url: String,
}

impl NativeHost {
    /// Starts `binary` on a free port with its state in `data` and its output in `log`, and
    /// waits until `GET /demo/host` answers 200.
    fn start(binary: &Path, data: &Path, log: &Path) -> Result<NativeHost> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log_file =
            fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let child = Command::new(binary)
            .env("PORT", port.to_string())
            .env("DURABLE_MCP_DATA", data)
            .env("DURABLE_MCP_INSPECTOR_TOKEN", INSPECTOR_TOKEN)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut host = NativeHost {
            child: Some(child),
            base_url: format!("http://127.0.0.1:{port}"),
        };
        let started = Instant::now();
        loop {
            if get_ok(port, "/demo/host") {
                return Ok(host);
            }
            if let Some(status) = host
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(format!(
                    "the native host exited before answering ({status}); see {}",
                    log.display()
                )
                .into());
            }
            if started.elapsed() > HOST_START_TIMEOUT {
                return Err(format!(
                    "the native host did not answer GET /demo/host within {HOST_START_TIMEOUT:?}; see {}",
                    log.display()
                )
                .into());
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM to the group, SIGKILL after [`HOST_STOP_TIMEOUT`]; fails if the host had
    /// already exited by itself (it should have run until told to stop).
    fn stop(mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if let Ok(Some(status)) = child.try_wait() {
            signal_group(&child, "-KILL");
            return Err(format!("the native host exited during the test ({status})").into());
        }
        signal_group(&child, "-TERM");
        let asked = Instant::now();
        while asked.elapsed() < HOST_STOP_TIMEOUT {
            if let Ok(Some(_)) = child.try_wait() {
                // The supervisor is gone; make sure its host child is too.
                signal_group(&child, "-KILL");
                return Ok(());
            }
            thread::sleep(Duration::from_millis(50));
        }
        signal_group(&child, "-KILL");
        let _ = child.wait();
        Ok(())
    }
}

impl Drop for NativeHost {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal_group(&child, "-KILL");
            let _ = child.wait();
        }
    }
}

/// Sends `signal` (`-TERM`, `-KILL`) to the process group led by `child`.
fn signal_group(child: &Child, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, "--", &format!("-{}", child.id())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// True if `GET path` on 127.0.0.1:`port` answers 200.
fn get_ok(port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}
