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
//!      `slow_compute` end cancelled, as the library polls; then `confirm_delete` again by
//!      push: the script opens a `subscriptions/listen` stream for the task (the library opens
//!      none) and hands each `notifications/tasks` frame to the library's session (its port's
//!      notification listener), whose tasks/get is never answered: the library must see
//!      input_required, answer it and complete with the result, and the stream must be
//!      acknowledged for the task and end with its `complete` response;
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
//! 4. **A store of the application's**: the black-box suite (`tests/tests/http_api.rs`)
//!    against the fixture server on a native host whose tasks are in a store of its own
//!    (`CONFORMANCE_STORE=own`, `examples/conformance/src/own_store.rs`).
//!
//! 5. **The fixtures mounted in an application's service**: `conformance-axum` serves them
//!    in the axum-app example's service (`NativeHost::mount`, the endpoint behind the
//!    service's own bearer check and request tracing, on its runtime); the black-box suite and
//!    the four client drivers (both eras) run against it, every request with a bearer token
//!    (`DURABLE_MCP_TEST_TOKEN`, `MCP_DRIVER_BEARER_TOKEN`).
//!
//! 6. **The same fixtures as a Cloudflare Worker**: `examples/conformance` is built with
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

mod conformance;
mod drivers;
mod inspector;
mod npx;

use std::fs;
use std::path::Path;
use std::time::Instant;

use xtask::Result;
use xtask::process::{Profile, build_binary, build_named_binary, target_dir, workspace_root};
use xtask::server::NativeServer;
use xtask::worker_target;

use drivers::Drivers;
use inspector::Era;
use npx::Npx;

/// The npm package that carries a Node 22 binary (the conformance suite and the inspector
/// need Node 22; the machine may have an older Node).
const NODE_22: &str = "node@22";

/// The setting (environment variable natively, Worker variable on workerd) of how long a call
/// to an optional task tool by a client without the Tasks extension waits inline.
const INLINE_DEADLINE_VAR: &str = "DURABLE_MCP_INLINE_DEADLINE";

/// The inline deadline both hosts run with here: shorter than the default 5 minutes, so that
/// `py_default_drive.py` sees a call outlive it (its `DRIVE_LONG_SECONDS`, 8 s, must exceed
/// it), and longer than any other call a client makes here without the Tasks extension
/// (1 s at most: `slow_compute` from the inspector and the Python drivers; the conformance
/// suite's and the black-box suite's take under half a second).
const INLINE_DEADLINE: &str = "5s";

/// Builds and starts the fixture server, runs every check against it, stops it; then the
/// same as a Worker; fails naming every check that failed.
pub fn run() -> Result<()> {
    let root = workspace_root();
    let out = target_dir(&root).join("conformance");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let started = Instant::now();

    let binary = build_binary("conformance-server", Profile::Debug)?;
    let deadline = [(INLINE_DEADLINE_VAR, INLINE_DEADLINE)];
    let server = NativeServer::start(&binary, &deadline, Some(&out.join("server.log")))?;
    let url = server.url().to_owned();
    say(format_args!("server at {url}"));

    let mut failed = Vec::new();
    let conformance = provision(&mut failed, "conformance", conformance::PACKAGE, &out);
    if let Some(npx) = &conformance {
        conformance::run_all(&mut failed, npx, &url, &out, "");
    }
    let inspector = provision(&mut failed, "inspector", inspector::PACKAGE, &out);
    if let Some(npx) = &inspector {
        let completes = inspector::completes(npx, &url, Era::Modern);
        record(&mut failed, "inspector slow_compute".into(), completes);
        let error = inspector::tool_error(npx, &url);
        record(&mut failed, "inspector failing_job".into(), error);
        let default_era = inspector::completes(npx, &url, Era::Default);
        let check = "inspector slow_compute (default era)";
        record(&mut failed, check.into(), default_era);
    }
    let drivers = Drivers::install(&root);
    drivers.run_all(&mut failed, &url, "", &[]);
    if let Some(status) = server.stop() {
        failed.push(format!("the server exited during the checks ({status})"));
    }

    // The native host with a store of the application's (`NativeHost::store`).
    let own_store = [deadline[0], ("CONFORMANCE_STORE", "own")];
    let check = "black-box suite on the native host with the application's store";
    match NativeServer::start(&binary, &own_store, Some(&out.join("own-store.log"))) {
        Ok(server) => {
            let suite = black_box_suite(&root, server.url(), &[]);
            record(&mut failed, check.into(), suite);
            if let Some(status) = server.stop() {
                failed.push(format!("{check}: the server exited ({status})"));
            }
        }
        Err(error) => record(&mut failed, check.into(), Err(error)),
    }

    // The same fixtures mounted in the axum-app example's service, behind its bearer check.
    mounted(&mut failed, &root, &out, &drivers, &deadline);

    // The same fixtures as a Cloudflare Worker under workerd.
    let fixtures = worker_target::CONFORMANCE_WORKER;
    match worker_target::start_with_vars(&root, fixtures, &deadline) {
        Ok(worker) => {
            let url = worker.mcp_url();
            say(format_args!("Worker at {url}"));
            let suite = black_box_suite(&root, &url, &[]);
            record(&mut failed, "black-box suite on the Worker".into(), suite);
            if let Some(npx) = &conformance {
                conformance::run_all(
                    &mut failed,
                    npx,
                    &url,
                    &out.join("worker"),
                    " on the Worker",
                );
            }
            if let Some(npx) = &inspector {
                record(
                    &mut failed,
                    "inspector slow_compute (default era) on the Worker".into(),
                    inspector::completes(npx, &url, Era::Default),
                );
            }
            drivers.run_all(&mut failed, &url, " on the Worker", &[]);
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

/// The bearer token the checks of the mounted endpoint send (a test value, for a server on
/// loopback that lives as long as the checks): as the fixtures' user `anonymous`, or followed
/// by `.alice` and `.bob` as theirs (see the tests' `DURABLE_MCP_TEST_TOKEN`).
const MOUNTED_TOKEN: &str = "clients-check-token-0001";

/// The black-box suite and the client drivers against `conformance-axum`: the fixtures
/// mounted in the axum-app example's service, every request with the service's bearer token.
fn mounted(
    failed: &mut Vec<String>,
    root: &Path,
    out: &Path,
    drivers: &Drivers,
    deadline: &[(&str, &str)],
) {
    let host = " in the axum-app service";
    let binary = match build_named_binary("conformance-server", "conformance-axum", Profile::Debug)
    {
        Ok(binary) => binary,
        Err(error) => {
            return record(
                failed,
                format!("conformance-axum (build){host}"),
                Err(error),
            );
        }
    };
    let token = MOUNTED_TOKEN;
    let users = format!("anonymous:{token},alice:{token}.alice,bob:{token}.bob");
    let mut env = deadline.to_vec();
    env.push(("AXUM_APP_TOKENS", &users));
    let server = match NativeServer::start(&binary, &env, Some(&out.join("axum-app.log"))) {
        Ok(server) => server,
        Err(error) => {
            return record(
                failed,
                format!("conformance-axum (start){host}"),
                Err(error),
            );
        }
    };
    say(format_args!("mounted endpoint at {}", server.url()));
    let suite = black_box_suite(root, server.url(), &[("DURABLE_MCP_TEST_TOKEN", token)]);
    record(failed, format!("black-box suite{host}"), suite);
    drivers.run_all(
        failed,
        server.url(),
        host,
        &[("MCP_DRIVER_BEARER_TOKEN", token)],
    );
    if let Some(status) = server.stop() {
        failed.push(format!(
            "conformance-axum exited during the checks ({status})"
        ));
    }
}

/// The npx package set `package` with Node 22; a failed install is recorded as the failed
/// check `<name> (install)`.
fn provision(failed: &mut Vec<String>, name: &str, package: &str, out: &Path) -> Option<Npx> {
    match Npx::provision(&[NODE_22, package], out) {
        Ok(npx) => Some(npx),
        Err(error) => {
            record(failed, format!("{name} (install)"), Err(error));
            None
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

/// Runs the black-box HTTP suite against `url`; it passes if every test passes.
///
/// It selects packages and features as `cargo xtask test`'s workspace test step does, so the
/// test binary that step built is run again instead of a second build of the crates.
fn black_box_suite(root: &Path, url: &str, env: &[(&str, &str)]) -> Result<String> {
    let schemas = crate::wire_schemas::ensure()?;
    let output = xtask::process::cargo()
        .current_dir(root)
        .args(crate::checks::WORKSPACE_TESTS)
        .args(["--test", "http_api"])
        .env("DURABLE_MCP_TEST_URL", url)
        .env("DURABLE_MCP_SCHEMAS", schemas)
        .envs(env.iter().copied())
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout
        .lines()
        .rev()
        .find(|line| line.starts_with("test result:"))
        .unwrap_or("no summary line")
        .to_owned();
    if output.status.success() {
        return Ok(summary);
    }
    Err(format!(
        "{summary}\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    )
    .into())
}
