//! `cargo xtask clients`: the official MCP conformance suite and official MCP clients, run
//! against the conformance fixture server (`examples/conformance`, package
//! `conformance-server`), in both protocol eras it serves: 2026-07-28 (stateless,
//! `server/discover`, the Tasks extension) and 2025-11-25 (the `initialize` handshake,
//! experimental core tasks).
//!
//! The command builds the server, starts it on a free port of 127.0.0.1 with a fresh data
//! directory and an inline deadline of 5 s (`DURABLE_MCP_INLINE_DEADLINE=5s` in place of the
//! default 5 minutes, so that the Python default-mode driver sees a call outlive it within
//! seconds; every other call made here by a client without the Tasks extension ends within
//! about a second), reads its URL from its first line of output, and runs, in order:
//!
//! 1. **The conformance suite** (`@modelcontextprotocol/conformance`, on Node 22): every
//!    `tasks-*` scenario on its own (each must exit 0), then every scenario the 2026-07-28
//!    revision requires, against the baseline `tests/conformance/expected-failures.yml`, then
//!    every scenario the 2025-11-25 revision requires, against
//!    `tests/conformance/expected-failures-2025-11-25.yml` (each run must exit 0: no failure
//!    outside its baseline, no stale entry in it). Results go to `target/conformance/`.
//! 2. **The inspector CLI** (`@modelcontextprotocol/inspector`, on Node 22). In the modern era
//!    (`--protocol-era modern`), `slow_compute` must exit 0 and print a completed result with
//!    content, and `failing_job` (a tool error) must exit 5. In its default era for a URL (the
//!    2025 handshake, which calls the optional task `slow_compute` as a plain tool),
//!    `slow_compute` must exit 0 and print a result with content that is not a task.
//! 3. **The official client libraries**, on the machine's Node and Python, each driven by a
//!    script in `tests/mcp-clients/` that must exit 0 (each prints one line per outcome):
//!    - `ext-tasks-drive.mjs` (`@modelcontextprotocol/ext-tasks`, 2026-07-28): sees
//!      `confirm_delete` go input_required → tasks/update → completed and a cancelled
//!      `slow_compute` end cancelled;
//!    - `v1-tasks-drive.mjs` (the v1 TypeScript SDK `@modelcontextprotocol/sdk`, 2025-11-25
//!      experimental tasks through `callToolStream`): `slow_compute` and `confirm_delete` (with
//!      its elicitation answered) as tasks to their results, `tasks/list` listing them, and
//!      `tasks/cancel` of a long `slow_compute`;
//!    - `py_legacy_drive.py` (the Python SDK `mcp`, legacy mode, which has no tasks):
//!      `slow_compute` inline with at least one progress notification, and `confirm_delete`
//!      inline with its elicitation answered;
//!    - `py_default_drive.py` (the Python SDK `mcp` in its default mode: 2026-07-28 through
//!      `server/discover`, without the Tasks extension): the negotiated revision, and no
//!      extension declared; `slow_compute` (1 s) answered inline; `ask_twice` asking its two
//!      questions one after the other as input rounds of the call (the elicitation callback
//!      called twice, the second question naming the first answer) to `name=Ada
//!      colour=green`; `confirm_delete` with one round to `deleted=true`; an 8 s
//!      `slow_compute` outliving the 5 s inline deadline as error -32021 ("still running",
//!      `data.taskId`); and the required `failing_job` refused with -32021 up front.
//!
//!    The npm packages are pinned by `tests/mcp-clients/package-lock.json` and installed with
//!    `npm ci` when `node_modules` is missing or was installed from another lockfile. The
//!    Python packages are pinned by `tests/mcp-clients/requirements.txt` and installed with pip
//!    into a virtual environment, `target/py-clients`, made anew when it is missing or was
//!    installed from other requirements or by another Python. Python 3 with its `venv` module
//!    must be on the machine: without it the Python checks fail saying so.
//!
//! 4. **The same fixtures as a Cloudflare Worker**: `examples/conformance` is built with
//!    worker-build and run under `wrangler dev` (workerd, real Durable Object SQLite and
//!    alarms, loopback only); the black-box suite (`tests/tests/http_api.rs`, through
//!    `DURABLE_MCP_TEST_URL`), the ten `tasks-*` scenarios, the 2026-07-28 and 2025-11-25 requirements
//!    against their baseline, the inspector's default-era `slow_compute` and the four client
//!    drivers run against it. The Worker gets the same 5 s inline deadline (the Worker variable
//!    `DURABLE_MCP_INLINE_DEADLINE`, passed to `wrangler dev` with `--var`). See the
//!    `worker_target` module.
//!
//! Node 22 comes from the npm package `node`, through npx: each npx package set is
//! provisioned once (`npx -y -p node@22 -p <tool>@<version> -c …`, which installs it in
//! npm's cache on first use), and the tool then runs on the `PATH` npx gives its commands,
//! which saves npx's start-up on each of the many runs. Every check runs even if an
//! earlier one failed; the command fails at the end, naming each failed check.

use std::error::Error;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The error type of this module's fallible steps.
type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

/// The npm package that carries a Node 22 binary (the conformance suite and the inspector
/// need Node 22; the machine may have an older Node).
const NODE_22: &str = "node@22";

/// The conformance suite, pinned: its scenarios and check IDs change between prereleases.
const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";

/// The inspector, pinned.
const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";

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

/// The npm project of the clients run on the machine's Node, and the Python clients'
/// requirements, relative to the workspace root.
const CLIENTS_DIR: &str = "tests/mcp-clients";

/// The ext-tasks driver (2026-07-28), relative to [`CLIENTS_DIR`].
const EXT_TASKS_DRIVER: &str = "ext-tasks-drive.mjs";

/// The v1 TypeScript SDK driver (2025-11-25 experimental tasks), relative to [`CLIENTS_DIR`].
const V1_TASKS_DRIVER: &str = "v1-tasks-drive.mjs";

/// The Python SDK driver (2025-11-25, legacy mode), relative to [`CLIENTS_DIR`].
const PY_LEGACY_DRIVER: &str = "py_legacy_drive.py";

/// The Python SDK driver (2026-07-28 without the Tasks extension, the SDK's default mode),
/// relative to [`CLIENTS_DIR`].
const PY_DEFAULT_DRIVER: &str = "py_default_drive.py";

/// The Python drivers' pinned packages, relative to [`CLIENTS_DIR`].
const PY_REQUIREMENTS: &str = "requirements.txt";

/// The virtual environment the Python drivers run in, relative to the target directory.
const PY_VENV: &str = "py-clients";

/// The Python the virtual environment is made with, from `PATH`.
const PYTHON: &str = "python3";

/// A copy of the lockfile `node_modules` was installed from, inside `node_modules`.
const INSTALL_STAMP: &str = ".xtask-installed-package-lock.json";

/// What the virtual environment was installed from (the Python version and the requirements),
/// inside the environment.
const PY_INSTALL_STAMP: &str = ".xtask-installed-requirements.txt";

/// The setting (environment variable natively, Worker variable on workerd) of how long a call
/// to an optional task tool by a client without the Tasks extension waits inline.
const INLINE_DEADLINE_VAR: &str = "DURABLE_MCP_INLINE_DEADLINE";

/// The inline deadline both hosts run with here: shorter than the default 5 minutes, so that
/// [`PY_DEFAULT_DRIVER`] sees a call outlive it (its `DRIVE_LONG_SECONDS`, 8 s, must exceed
/// it), and longer than any other call a client makes here without the Tasks extension
/// (1 s at most: `slow_compute` from the inspector and the Python drivers; the conformance
/// suite's and the black-box suite's take under half a second).
const INLINE_DEADLINE: &str = "5s";

/// The server's announcement on stdout; the URL follows it.
const SERVING_PREFIX: &str = "durable-mcp: serving MCP at ";

/// How long the server may take to announce its URL.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest one conformance scenario may take (the suite's own limit is 30 s).
const CONFORMANCE_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest the run of every scenario a revision requires may take (about 50 scenarios
/// at 2026-07-28, 33 at 2025-11-25; 10 s and 3 s when they pass).
const REQUIREMENTS_TIMEOUT: Duration = Duration::from_secs(900);

/// The longest one inspector run may take.
const INSPECTOR_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest one client driver may take (each gives up on its own after 120 s).
const DRIVER_TIMEOUT: Duration = Duration::from_secs(180);

/// The inspector's exit code for a tool result with `isError: true`.
const INSPECTOR_TOOL_ERROR_EXIT: i32 = 5;

/// Builds and starts the fixture server, runs every check against it, stops it; then the
/// same as a Worker; fails naming every check that failed.
pub fn run() -> Result<()> {
    let root = workspace_root();
    let out = target_dir(&root).join("conformance");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let started = Instant::now();

    let binary = build_binary(&root, "conformance-server")?;
    let data = tempfile::tempdir()?;
    let server = Server::start(&binary, data.path(), &out.join("server.log"))?;
    say(format_args!("server at {}", server.url));

    let mut failed = Vec::new();
    let conformance = Npx::provision(&[NODE_22, CONFORMANCE], &out);
    match &conformance {
        Ok(npx) => {
            for scenario in TASK_SCENARIOS {
                let name = format!("conformance {scenario}");
                record(
                    &mut failed,
                    name,
                    conformance_scenario(npx, &server.url, scenario, &out),
                );
            }
            for requirements in [&REQUIREMENTS_2026, &REQUIREMENTS_2025] {
                let name = format!("conformance --requirements {}", requirements.revision);
                let outcome = conformance_requirements(npx, &server.url, requirements, &root, &out);
                record(&mut failed, name, outcome);
            }
        }
        Err(error) => record(
            &mut failed,
            "conformance (install)".into(),
            Err(error.to_string().into()),
        ),
    }

    let inspector = Npx::provision(&[NODE_22, INSPECTOR], &out);
    match &inspector {
        Ok(npx) => {
            record(
                &mut failed,
                "inspector slow_compute".into(),
                inspector_completes(npx, &server.url, Era::Modern),
            );
            record(
                &mut failed,
                "inspector failing_job".into(),
                inspector_tool_error(npx, &server.url),
            );
            record(
                &mut failed,
                "inspector slow_compute (default era)".into(),
                inspector_completes(npx, &server.url, Era::Default),
            );
        }
        Err(error) => record(
            &mut failed,
            "inspector (install)".into(),
            Err(error.to_string().into()),
        ),
    }

    let clients = root.join(CLIENTS_DIR);
    // Installed once for both hosts; a failed install fails every driver that needs it.
    let node_modules = npm_ci(&root, CLIENTS_DIR).map_err(|e| e.to_string());
    let venv =
        python_venv(PYTHON, &clients, &target_dir(&root).join(PY_VENV)).map_err(|e| e.to_string());
    let drivers = Drivers {
        clients: &clients,
        node_modules: &node_modules,
        venv: &venv,
    };
    drivers.run_all(&mut failed, &server.url, "");

    let server_exit = server.stop();
    if let Some(status) = server_exit {
        failed.push(format!("the server exited during the checks ({status})"));
    }

    // The same fixtures as a Cloudflare Worker under workerd.
    let worker = crate::worker_target::start_with_vars(
        &root,
        crate::worker_target::CONFORMANCE_WORKER,
        &[(INLINE_DEADLINE_VAR, INLINE_DEADLINE)],
    );
    match worker {
        Ok(worker) => {
            let url = worker.mcp_url();
            say(format_args!("Worker at {url}"));
            record(
                &mut failed,
                "black-box suite on the Worker".into(),
                crate::worker_target::black_box_suite(&root, &url),
            );
            if let Ok(npx) = &conformance {
                let worker_out = out.join("worker");
                for scenario in TASK_SCENARIOS {
                    let name = format!("conformance {scenario} on the Worker");
                    let outcome = conformance_scenario(npx, &url, scenario, &worker_out);
                    record(&mut failed, name, outcome);
                }
                for requirements in [&REQUIREMENTS_2026, &REQUIREMENTS_2025] {
                    let name = format!(
                        "conformance --requirements {} on the Worker",
                        requirements.revision
                    );
                    let outcome =
                        conformance_requirements(npx, &url, requirements, &root, &worker_out);
                    record(&mut failed, name, outcome);
                }
            }
            if let Ok(npx) = &inspector {
                record(
                    &mut failed,
                    "inspector slow_compute (default era) on the Worker".into(),
                    inspector_completes(npx, &url, Era::Default),
                );
            }
            drivers.run_all(&mut failed, &url, " on the Worker");
        }
        Err(error) => record(&mut failed, "Worker (build, start)".into(), Err(error)),
    }
    say(format_args!("done in {:.0?}", started.elapsed()));
    if failed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "clients: {} check(s) failed: {} (conformance results in {}, server log in {})",
        failed.len(),
        failed.join("; "),
        out.display(),
        out.join("server.log").display()
    )
    .into())
}

/// The client drivers in `tests/mcp-clients`, with what they were installed with.
struct Drivers<'a> {
    /// The clients' directory.
    clients: &'a Path,
    /// Whether `npm ci` installed the Node clients (the error if not).
    node_modules: &'a Result<(), String>,
    /// The Python virtual environment's interpreter (the error if there is none).
    venv: &'a Result<PathBuf, String>,
}

impl Drivers<'_> {
    /// Runs every driver against `url`, naming each check with `host` appended.
    fn run_all(&self, failed: &mut Vec<String>, url: &str, host: &str) {
        for (check, script) in [
            ("ext-tasks driver", EXT_TASKS_DRIVER),
            ("v1 SDK tasks driver", V1_TASKS_DRIVER),
        ] {
            let outcome = match self.node_modules {
                Ok(()) => {
                    let mut command = Command::new("node");
                    command.arg(script);
                    driver(command, self.clients, url)
                }
                Err(error) => Err(error.clone().into()),
            };
            record(failed, format!("{check}{host}"), outcome);
        }
        for (check, script) in [
            ("Python legacy driver", PY_LEGACY_DRIVER),
            ("Python default-mode driver", PY_DEFAULT_DRIVER),
        ] {
            let outcome = match self.venv {
                Ok(python) => {
                    let mut command = Command::new(python);
                    command.arg(script);
                    driver(command, self.clients, url)
                }
                Err(error) => Err(error.clone().into()),
            };
            record(failed, format!("{check}{host}"), outcome);
        }
    }
}

/// Prints `result` as the outcome of `check`, and remembers the check if it failed.
fn record(failed: &mut Vec<String>, check: String, result: Result<String>) {
    match result {
        Ok(detail) => say(format_args!("ok   {check}: {detail}")),
        Err(error) => {
            say(format_args!("FAIL {check}: {error}"));
            failed.push(check);
        }
    }
}

/// Prints one progress line.
fn say(message: std::fmt::Arguments<'_>) {
    println!("xtask clients: {message}");
}

/// The workspace root (this crate's parent directory).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` if set (relative to the current directory,
/// as cargo reads it), `<root>/target` otherwise.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => std::path::absolute(&dir).unwrap_or_else(|_| PathBuf::from(dir)),
        None => root.join("target"),
    }
}

/// Builds the binary of `package` (debug) and returns its executable: the fixture server
/// here, the story-demo host for `cargo xtask browser`.
///
/// Debug, not release: on a fresh machine either costs about the same on top of what
/// `cargo test` and the release build of xtask compiled (measured: 14 s each, as the server
/// needs other features of durable-mcp and its dependencies than either), and after an edit
/// debug rebuilds incrementally in about a second where release takes over ten. The servers
/// do too little work in these checks for optimisation to matter.
pub(crate) fn build_binary(root: &Path, package: &str) -> Result<PathBuf> {
    println!("xtask: cargo build --package {package}");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--package", package])
        .args(["--message-format", "json-render-diagnostics"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!("building {package} failed ({})", output.status).into());
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == package)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo built {package} but reported no executable").into())
}

/// The running fixture server; killed when stopped or dropped.
struct Server {
    /// The server process.
    child: Child,
    /// The MCP endpoint it announced.
    url: String,
}

impl Server {
    /// Starts `binary` on a free port of 127.0.0.1 with its state in `data`, an inline
    /// deadline of [`INLINE_DEADLINE`], its stderr going to `log`, and waits for it to announce
    /// its URL.
    fn start(binary: &Path, data: &Path, log: &Path) -> Result<Server> {
        let log_file =
            fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut child = Command::new(binary)
            .env("PORT", "0")
            .env("DURABLE_MCP_DATA", data)
            .env(INLINE_DEADLINE_VAR, INLINE_DEADLINE)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the server's stdout is not piped")?;
        let (sender, receiver) = mpsc::channel();
        // Reads the announcement, then keeps draining stdout so the server never blocks on it.
        thread::spawn(move || {
            let mut sender = Some(sender);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.trim().strip_prefix(SERVING_PREFIX)
                    && let Some(sender) = sender.take()
                {
                    let _ = sender.send(url.to_owned());
                }
            }
        });
        let mut server = Server {
            child,
            url: String::new(),
        };
        match receiver.recv_timeout(SERVER_START_TIMEOUT) {
            Ok(url) => server.url = url,
            Err(_) => {
                let status = server.child.try_wait().ok().flatten();
                let why = status.map_or_else(
                    || "no announcement".to_owned(),
                    |s| format!("it exited ({s})"),
                );
                return Err(format!(
                    "the server did not announce its URL within {SERVER_START_TIMEOUT:?}: {why}; see {}",
                    log.display()
                )
                .into());
            }
        }
        // Every server this command starts listens on loopback only.
        if !server.url.starts_with("http://127.0.0.1:") {
            return Err(format!(
                "the server announced {}, not an address on 127.0.0.1",
                server.url
            )
            .into());
        }
        Ok(server)
    }

    /// Stops the server; returns its exit status if it had already exited by itself.
    fn stop(mut self) -> Option<ExitStatus> {
        let exited = self.child.try_wait().ok().flatten();
        let _ = self.child.kill();
        let _ = self.child.wait();
        exited
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An npx package set, installed in npm's cache, and the `PATH` npx runs its commands with.
struct Npx {
    /// `PATH` with the package set's `node_modules/.bin` (holding `node` and the tool) first.
    path: String,
}

impl Npx {
    /// Installs `packages` through npx unless npm's cache already holds them, and learns the
    /// `PATH` npx gives commands run with them. Runs in `cwd`, a directory without a
    /// `package.json` above it, so npx resolves nothing from a local project.
    fn provision(packages: &[&str], cwd: &Path) -> Result<Npx> {
        const MARKER: &str = "xtask-npx-path=";
        let mut command = Command::new("npx");
        command.current_dir(cwd).arg("-y");
        for package in packages {
            command.args(["-p", package]);
        }
        command.args(["-c", &format!("printf '{MARKER}%s\\n' \"$PATH\"")]);
        let started = Instant::now();
        let output = command
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run npx (Node.js and npm are needed): {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let path = stdout.lines().find_map(|line| line.strip_prefix(MARKER));
        match path {
            Some(path) if output.status.success() => {
                say(format_args!(
                    "npx {}: ready in {:.1?}",
                    packages.join(" "),
                    started.elapsed()
                ));
                Ok(Npx {
                    path: path.to_owned(),
                })
            }
            _ => Err(format!(
                "npx -y -p {} failed ({}):\n{}",
                packages.join(" -p "),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
            .into()),
        }
    }

    /// A command running `program` from this package set (or from the rest of `PATH`).
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("PATH", &self.path);
        command
    }
}

/// What a finished (or timed-out) child process did.
pub(crate) struct Run {
    /// Its exit status; `None` if it was killed for running too long.
    pub(crate) status: Option<ExitStatus>,
    /// Everything it wrote to stdout.
    pub(crate) stdout: String,
    /// Everything it wrote to stderr.
    pub(crate) stderr: String,
    /// How long it ran.
    pub(crate) elapsed: Duration,
}

impl Run {
    /// The exit status in words: `exit status: 1`, or that it was killed.
    pub(crate) fn status_text(&self) -> String {
        match self.status {
            Some(status) => status.to_string(),
            None => "killed after its time limit".to_owned(),
        }
    }

    /// The process's output, for a failure message.
    pub(crate) fn transcript(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }
}

/// Runs `command` with its output captured, killing it (and every process it started) if it
/// runs longer than `limit`.
pub(crate) fn run_with_limit(command: &mut Command, limit: Duration) -> Result<Run> {
    let shown = command.get_program().to_string_lossy().into_owned();
    let started = Instant::now();
    // A process group of its own, so a timeout can end the tool's children too.
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > limit {
            // Kill the group by its id (the child's pid), then reap the child.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(50));
    };
    let elapsed = started.elapsed();
    Ok(Run {
        status,
        stdout: strip_colours(&stdout.join().unwrap_or_default()),
        stderr: strip_colours(&stderr.join().unwrap_or_default()),
        elapsed,
    })
}

/// `text` without its ANSI colour sequences (`ESC [ … m`), which the suite prints even to a
/// pipe.
fn strip_colours(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        plain.push_str(&rest[..at]);
        let sequence = &rest[at + 2..];
        let end = sequence.find(|c: char| !(c.is_ascii_digit() || c == ';'));
        rest = match end {
            Some(end) if sequence[end..].starts_with('m') => &sequence[end + 1..],
            _ => sequence,
        };
    }
    plain.push_str(rest);
    plain
}

/// Reads a child's pipe to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs one conformance scenario; it passes if the suite exits 0.
fn conformance_scenario(npx: &Npx, url: &str, scenario: &str, out: &Path) -> Result<String> {
    let dir = fresh_dir(&out.join(scenario))?;
    let mut command = npx.command("conformance");
    command
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(&dir);
    let run = run_with_limit(&mut command, CONFORMANCE_TIMEOUT)?;
    let summary = last_line_starting(&run.stdout, "Passed:").unwrap_or("no summary line");
    if run.status.is_some_and(|status| status.success()) {
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
fn conformance_requirements(
    npx: &Npx,
    url: &str,
    requirements: &Requirements,
    root: &Path,
    out: &Path,
) -> Result<String> {
    let Requirements { revision, baseline } = requirements;
    let file = root.join(baseline);
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
    if run.status.is_some_and(|status| status.success()) {
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

/// The protocol era the inspector CLI speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
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
fn inspector_completes(npx: &Npx, url: &str, era: Era) -> Result<String> {
    let run = inspector(npx, url, era, "slow_compute", r#"{"seconds":1}"#)?;
    if !run.status.is_some_and(|status| status.success()) {
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
fn inspector_tool_error(npx: &Npx, url: &str) -> Result<String> {
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

/// Installs the npm packages of the project `relative` (to `root`: `tests/mcp-clients`,
/// `tests/browser`) with `npm ci`, unless its `node_modules` was installed from the current
/// lockfile (a copy of which is kept inside it).
pub(crate) fn npm_ci(root: &Path, relative: &str) -> Result<()> {
    let dir = root.join(relative);
    let lockfile = fs::read(dir.join("package-lock.json"))
        .map_err(|e| format!("cannot read {relative}/package-lock.json: {e}"))?;
    let stamp = dir.join("node_modules").join(INSTALL_STAMP);
    if fs::read(&stamp).is_ok_and(|installed| installed == lockfile) {
        return Ok(());
    }
    println!("xtask: npm ci --prefix {relative}");
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run npm (Node.js and npm are needed): {e}"))?;
    if !status.success() {
        return Err(format!("npm ci --prefix {relative} failed ({status})").into());
    }
    fs::write(&stamp, lockfile).map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(())
}

/// Creates the Python clients' virtual environment `venv` with `python` and installs
/// [`PY_REQUIREMENTS`] into it with pip, unless it was installed from the same requirements
/// by the same Python (a copy of both is kept inside it); returns its interpreter. Python 3
/// with its `venv` module must be on the machine: without it this fails saying so.
fn python_venv(python: &str, clients: &Path, venv: &Path) -> Result<PathBuf> {
    let requirements = fs::read_to_string(clients.join(PY_REQUIREMENTS))
        .map_err(|e| format!("cannot read {CLIENTS_DIR}/{PY_REQUIREMENTS}: {e}"))?;
    let version = Command::new(python)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "cannot run {python} ({e}): the Python driver needs Python 3 with its venv \
                 module on the machine (on Debian: apt-get install python3 python3-venv)"
            )
        })?;
    if !version.status.success() {
        return Err(format!(
            "{python} --version failed ({}): {}",
            version.status,
            String::from_utf8_lossy(&version.stderr).trim()
        )
        .into());
    }
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let stamp_text = format!("# {version}\n{requirements}");
    let interpreter = venv.join("bin").join("python");
    let stamp = venv.join(PY_INSTALL_STAMP);
    if interpreter.is_file() && fs::read_to_string(&stamp).is_ok_and(|text| text == stamp_text) {
        return Ok(interpreter);
    }
    // Made anew, so packages dropped from the requirements go too (as `npm ci` does).
    if venv.exists() {
        fs::remove_dir_all(venv).map_err(|e| format!("cannot clear {}: {e}", venv.display()))?;
    }
    say(format_args!(
        "{python} -m venv {} ({version}); pip install -r {CLIENTS_DIR}/{PY_REQUIREMENTS}",
        venv.display()
    ));
    let created = Command::new(python)
        .args(["-m", "venv"])
        .arg(venv)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {python} -m venv: {e}"))?;
    if !created.status.success() {
        return Err(format!(
            "{python} -m venv failed ({}): the Python driver needs {version} with its venv \
             module and ensurepip (on Debian: apt-get install python3-venv):\n{}{}",
            created.status,
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr).trim_end()
        )
        .into());
    }
    let status = Command::new(&interpreter)
        .args(["-m", "pip", "install", "--quiet"])
        .args(["--disable-pip-version-check", "--no-input", "--requirement"])
        .arg(clients.join(PY_REQUIREMENTS))
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run pip in {}: {e}", venv.display()))?;
    if !status.success() {
        return Err(
            format!("pip install -r {CLIENTS_DIR}/{PY_REQUIREMENTS} failed ({status})").into(),
        );
    }
    fs::write(&stamp, stamp_text).map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(interpreter)
}

/// Runs a client driver (`command`, whose arguments so far name the script) in `clients`
/// against `url`; it passes if the driver exits 0, having printed one line per outcome.
fn driver(mut command: Command, clients: &Path, url: &str) -> Result<String> {
    command.current_dir(clients).arg(url);
    let run = run_with_limit(&mut command, DRIVER_TIMEOUT)?;
    let outcomes: Vec<&str> = run.stdout.lines().map(str::trim_end).collect();
    if run.status.is_some_and(|status| status.success()) {
        return Ok(format!(
            "exit 0 ({:.1?})\n  {}",
            run.elapsed,
            outcomes.join("\n  ")
        ));
    }
    Err(format!("{}\n{}", run.status_text(), run.transcript()).into())
}

#[cfg(test)]
mod tests {
    //! The helpers that decide what a run did.

    use super::*;

    /// A run over its limit is killed with every process it started, so its pipes close.
    #[test]
    fn a_run_over_its_limit_is_killed_with_its_children() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & echo started; sleep 30"]);
        let run = run_with_limit(&mut command, Duration::from_millis(300)).unwrap();
        assert!(run.status.is_none());
        assert_eq!(run.stdout, "started\n");
        assert!(
            run.elapsed < Duration::from_secs(10),
            "took {:?}",
            run.elapsed
        );
    }

    /// A run within its limit reports its exit status and output.
    #[test]
    fn a_run_within_its_limit_reports_status_and_output() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo err >&2; exit 5"]);
        let run = run_with_limit(&mut command, Duration::from_secs(30)).unwrap();
        assert_eq!(run.status.and_then(|status| status.code()), Some(5));
        assert_eq!(
            (run.stdout.as_str(), run.stderr.as_str()),
            ("out\n", "err\n")
        );
    }

    /// Without Python the Python checks fail, saying what the machine lacks.
    #[test]
    fn a_missing_python_fails_saying_so() {
        let clients = workspace_root().join(CLIENTS_DIR);
        let venv = tempfile::tempdir().unwrap();
        let error = python_venv("python3-not-on-this-machine", &clients, venv.path())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("cannot run python3-not-on-this-machine")
                && error.contains("needs Python 3 with its venv module"),
            "{error}"
        );
    }

    /// Colour sequences go; everything else stays.
    #[test]
    fn colours_are_stripped() {
        let text = "\u{1b}[31mUnexpected failures\u{1b}[0m:\n  \u{1b}[1;32m✓\u{1b}[0m x [y]";
        assert_eq!(strip_colours(text), "Unexpected failures:\n  ✓ x [y]");
    }

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
