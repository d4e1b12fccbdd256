//! `cargo xtask demo`: the newcomer's first command. It runs `examples/report-task` natively
//! with a demo report service beside it (the fake the example's tests use), so that
//! `send_report` has somewhere to fetch from and send to.

use std::error::Error;
use std::process::Command;

use durable_mcp_tests::report_api::FakeReportService;

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

/// Where the demo report service listens when the port is free (the example's default).
const REPORT_API_PORT: u16 = 8788;

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
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["run", "--quiet", "--package", "report-task"])
        .env("REPORT_API_URL", service.url())
        .status()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("report-task exited with {status}").into())
    }
}
