//! A Worker crate of the workspace built with worker-build and served by `wrangler dev --local`
//! on a free loopback port with a fresh state directory: the conformance fixtures for
//! `cargo xtask clients`, the bench Worker for `cargo xtask bench`; or a plain-JS Worker served
//! the same way without a build (the bench's JavaScript floor).

use std::path::Path;

use durable_mcp_tests::workerd::{WorkerProcess, build_worker};

use crate::Result;

/// The conformance fixtures' Worker crate, relative to the workspace root.
pub const CONFORMANCE_WORKER: &str = "examples/conformance";

/// A running Worker and the state directory it owns; both go when it is dropped.
#[derive(Debug)]
pub struct Worker {
    process: WorkerProcess,
    _state: tempfile::TempDir,
}

impl Worker {
    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        self.process.mcp_url()
    }

    /// The running Worker.
    pub fn process(&self) -> &WorkerProcess {
        &self.process
    }
}

/// Builds the Worker crate `relative` (to `root`) and starts it under `wrangler dev`.
pub fn start(root: &Path, relative: &str) -> Result<Worker> {
    launch(root, relative, true, &[])
}

/// [`start`] with Worker variables set (`wrangler dev --var NAME:VALUE`), which take the place
/// of the same variables in the crate's `wrangler.toml`.
pub fn start_with_vars(root: &Path, relative: &str, vars: &[(&str, &str)]) -> Result<Worker> {
    launch(root, relative, true, vars)
}

/// Starts the plain-JS Worker `relative` (to `root`; its `wrangler.toml`'s `main` is a module
/// wrangler bundles itself) under `wrangler dev`, with no build step.
pub fn start_js(root: &Path, relative: &str) -> Result<Worker> {
    launch(root, relative, false, &[])
}

fn launch(root: &Path, relative: &str, build: bool, vars: &[(&str, &str)]) -> Result<Worker> {
    let dir = root.join(relative);
    let state = tempfile::tempdir()?;
    // The helpers are the tests' own and report a failure by panicking.
    let process = crate::process::catch_panic(|| {
        if build {
            build_worker(&dir);
        }
        WorkerProcess::start_with_vars(&dir, state.path(), vars)
    })
    .map_err(|message| format!("the Worker in {relative} did not build or start: {message}"))?;
    Ok(Worker {
        process,
        _state: state,
    })
}
