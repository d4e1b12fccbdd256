//! Builds a test Worker with worker-build and runs it under workerd (`wrangler dev --local`)
//! on a free loopback port with its own state directory, for tests. The tools come from
//! `cargo xtask test`, which installs them (see `xtask/src/worker_tools.rs`).

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::http::Connection;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn tool(relative: &str) -> PathBuf {
    let path = workspace_root().join(relative);
    assert!(
        path.exists(),
        "{relative} is missing: `cargo xtask test` installs the Worker tools (worker-build, \
         wasm-bindgen-cli, wrangler) before it runs the tests"
    );
    path
}

/// Builds the Worker crate in `dir` (release, wasm-opt off) into `dir/build/`.
pub fn build_worker(dir: &Path) {
    let root = workspace_root();
    let status = Command::new(tool("target/worker-tools/bin/worker-build"))
        .arg("--release")
        .current_dir(dir)
        .env(
            "WASM_BINDGEN_BIN",
            tool("target/worker-tools/bin/wasm-bindgen"),
        )
        .env(
            "ESBUILD_BIN",
            tool("tests/workerd/node_modules/.bin/esbuild"),
        )
        .env("CARGO_TARGET_DIR", root.join("target/workers"))
        .status()
        .expect("run worker-build");
    assert!(status.success(), "worker-build failed in {}", dir.display());
}

/// A Worker running under `wrangler dev --local`.
#[derive(Debug)]
pub struct WorkerProcess {
    child: Child,
    url: String,
    port: u16,
}

impl WorkerProcess {
    /// Starts the built Worker of `dir` (its `wrangler.toml`) with state in `state`, and waits
    /// until the Worker answers `GET /` (with any status but a 5xx).
    pub fn start(dir: &Path, state: &Path) -> Self {
        Self::start_with_vars(dir, state, &[])
    }

    /// [`start`](Self::start) with Worker variables set (`--var NAME:VALUE`).
    pub fn start_with_vars(dir: &Path, state: &Path, vars: &[(&str, &str)]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(tool("tests/workerd/node_modules/.bin/wrangler"))
            .args([
                "dev",
                "--local",
                "--ip",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .arg("--persist-to")
            .arg(state)
            .args(["--log-level", "warn"])
            .args(
                vars.iter()
                    .flat_map(|(name, value)| ["--var".to_owned(), format!("{name}:{value}")]),
            )
            .current_dir(dir)
            // Quiet and offline-safe: no telemetry, no update check, no Request.cf download.
            .envs([
                ("CI", "true"),
                ("WRANGLER_SEND_METRICS", "false"),
                ("WRANGLER_SEND_ERROR_REPORTS", "false"),
                ("CLOUDFLARE_CF_FETCH_ENABLED", "false"),
                ("WRANGLER_HIDE_BANNER", "true"),
            ])
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start wrangler dev");
        let worker = WorkerProcess {
            child,
            url: format!("http://127.0.0.1:{port}"),
            port,
        };
        worker.wait_ready();
        worker
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Connection::open(([127, 0, 0, 1], self.port).into())
                .and_then(|mut connection| connection.request("GET", "/", &[], b""))
                .is_ok_and(|response| response.status < 500);
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "wrangler dev did not answer within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The Worker's base URL (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The MCP endpoint's URL.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.url)
    }

    /// A GET of `path`.
    pub fn get(&self, path: &str) -> crate::http::Response {
        Connection::open(([127, 0, 0, 1], self.port).into())
            .and_then(|mut connection| connection.request("GET", path, &[], b""))
            .unwrap_or_else(|error| panic!("GET {path}: {error}"))
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        // wrangler runs node and workerd children: stop the whole group.
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}
