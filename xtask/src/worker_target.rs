//! The conformance fixtures as a Cloudflare Worker: `examples/conformance` built with
//! worker-build and served by `wrangler dev --local` on a free loopback port, with a fresh
//! state directory, for `cargo xtask clients`.

use std::error::Error;
use std::path::Path;
use std::process::Command;

use durable_mcp_tests::workerd::{WorkerProcess, build_worker};

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

/// The Worker crate, relative to the workspace root.
const WORKER_DIR: &str = "examples/conformance";

/// A running Worker and the state directory it owns; both go when it is dropped.
pub struct Worker {
    process: WorkerProcess,
    _state: tempfile::TempDir,
}

impl Worker {
    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        self.process.mcp_url()
    }
}

/// Builds the fixtures' Worker and starts it under `wrangler dev`.
pub fn start(root: &Path) -> Result<Worker> {
    let dir = root.join(WORKER_DIR);
    let state = tempfile::tempdir()?;
    // The helpers are the tests' own and report a failure by panicking.
    let process = std::panic::catch_unwind(|| {
        build_worker(&dir);
        WorkerProcess::start(&dir, state.path())
    })
    .map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        format!("the Worker in {WORKER_DIR} did not build or start: {message}")
    })?;
    Ok(Worker {
        process,
        _state: state,
    })
}

/// Runs the black-box HTTP suite against `url`; it passes if every test passes.
pub fn black_box_suite(root: &Path, url: &str) -> Result<String> {
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["test", "-p", "durable-mcp-tests", "--test", "http_api"])
        .env("DURABLE_MCP_TEST_URL", url)
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
