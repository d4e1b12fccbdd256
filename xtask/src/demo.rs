//! `cargo xtask demo`: the newcomer's first command. It runs `examples/report-task` natively
//! with a demo report service beside it (the fake the example's tests use), so that
//! `send_report` has somewhere to fetch from and send to. `cargo xtask demo --worker` runs the
//! same example as a Worker under `wrangler dev`, from the root `wrangler.toml` as deployed
//! (its report service is the demo inside the Worker).

use std::process::Command;

use durable_mcp_tests::report_api::FakeReportService;
use durable_mcp_tests::workerd::{build_worker, wrangler};
use xtask::Result;
use xtask::process::workspace_root;

/// Where the demo report service listens when the port is free (the example's default).
const REPORT_API_PORT: u16 = 8788;

/// The example's Worker crate, which the root `wrangler.toml` deploys.
const WORKER_CRATE: &str = "examples/report-task";

/// Where `demo --worker` keeps the Worker's Durable Object state, as the native demo keeps its
/// own in `./.durable-mcp/`.
const WORKER_STATE: &str = ".durable-mcp/worker";

/// Starts the demo report service, then runs the example in the foreground until it exits
/// (Ctrl-C stops both). `PORT` and `DURABLE_MCP_DATA` pass through to the example.
pub fn run() -> Result<()> {
    let service = std::net::TcpListener::bind(("127.0.0.1", REPORT_API_PORT))
        .map(drop)
        .map_or_else(
            |_| FakeReportService::start(),
            |()| FakeReportService::start_on(REPORT_API_PORT),
        );
    println!("demo report service at {}", service.url());
    let mut example = xtask::process::cargo();
    example
        .args(["run", "--quiet", "--package", "report-task"])
        .env("REPORT_API_URL", service.url());
    run_in_foreground(&mut example, "report-task")
}

/// Builds the example as a Worker, then serves it with `wrangler dev` in the foreground on
/// `PORT` (default 8787) until Ctrl-C; its tasks survive a restart in [`WORKER_STATE`].
pub fn run_worker() -> Result<()> {
    xtask::worker_tools::ensure()?;
    let root = workspace_root();
    std::panic::catch_unwind(|| build_worker(&root.join(WORKER_CRATE)))
        .map_err(|_| format!("the Worker build of {WORKER_CRATE} failed (see above)"))?;
    let port = std::env::var("PORT").unwrap_or_else(|_| "8787".to_owned());
    println!("report-task as a Worker at http://127.0.0.1:{port}/mcp (Ctrl-C stops it)");
    let mut dev = wrangler(&root);
    dev.args(["dev", "--local", "--ip", "127.0.0.1", "--port", &port])
        .args(["--persist-to", WORKER_STATE]);
    run_in_foreground(&mut dev, "wrangler dev")
}

/// Runs `command` until it exits (Ctrl-C stops it); an error says how it ended.
fn run_in_foreground(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .map_err(|error| format!("cannot run {what}: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} exited with {status}").into())
    }
}
