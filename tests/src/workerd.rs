//! Builds a test Worker with worker-build and runs it under workerd (`wrangler dev --local`)
//! on a free loopback port with its own state directory, for tests. The tools come from
//! `cargo xtask test`, which installs them (see `xtask/src/worker_tools.rs`).

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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

/// How every Worker here is built: the workspace's `worker` profile (small), no wasm-opt
/// (worker-build would download it), and panics unwinding (std rebuilt on nightly), so that a
/// panic in a task fails that task instead of the instance.
pub const WORKER_BUILD_ARGS: [&str; 4] = ["--profile", "worker", "--no-opt", "--panic-unwind"];

/// [`WORKER_BUILD_ARGS`] with wasm-opt, as the crate's `[package.metadata.wasm-pack.profile.
/// custom]` says: the deployed build, measured by `cargo xtask bench worker`. wasm-opt runs a
/// minute or two, so the tests build without it.
pub const OPTIMIZED_WORKER_BUILD_ARGS: [&str; 3] = ["--profile", "worker", "--panic-unwind"];

/// binaryen's wasm-opt (version 132, as worker-build expects), installed from npm by
/// `cargo xtask bench worker` and `cargo xtask size`.
pub const WASM_OPT: &str = "tests/binaryen/node_modules/.bin/wasm-opt";

/// worker-build in `dir` with the tools' paths set, so that it downloads nothing: add the
/// arguments.
pub fn worker_build(dir: &Path) -> Command {
    let root = workspace_root();
    let mut command = Command::new(tool("target/worker-tools/bin/worker-build"));
    command
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
        // cargo's probe of rustc (`rustc -`) reads standard input as source: input with text in
        // it fails the probe, and cargo caches the failure in the target directory.
        .stdin(std::process::Stdio::null());
    command
}

/// Builds the Worker crate in `dir` with [`WORKER_BUILD_ARGS`] into `dir/build/`.
pub fn build_worker(dir: &Path) {
    let status = worker_build(dir)
        .args(WORKER_BUILD_ARGS)
        .status()
        .expect("run worker-build");
    assert!(status.success(), "worker-build failed in {}", dir.display());
}

/// Builds the Worker crate in `dir` with [`OPTIMIZED_WORKER_BUILD_ARGS`] into `dir/build/`,
/// running [`WASM_OPT`] (worker-build would download binaryen if it were missing; it must not
/// be).
pub fn build_worker_optimized(dir: &Path) {
    let wasm_opt = workspace_root().join(WASM_OPT);
    assert!(
        wasm_opt.exists(),
        "{WASM_OPT} is missing: `cargo xtask bench worker` installs it"
    );
    let status = worker_build(dir)
        .args(OPTIMIZED_WORKER_BUILD_ARGS)
        .env("WASM_OPT_BIN", wasm_opt)
        .status()
        .expect("run worker-build");
    assert!(status.success(), "worker-build failed in {}", dir.display());
}

/// wrangler (4.86.0, from `tests/workerd`) run in `dir`, quiet and offline-safe: no
/// telemetry, no update check, no `Request.cf` download.
pub fn wrangler(dir: &Path) -> Command {
    let mut command = Command::new(tool("tests/workerd/node_modules/.bin/wrangler"));
    command.current_dir(dir).envs([
        ("CI", "true"),
        ("WRANGLER_SEND_METRICS", "false"),
        ("WRANGLER_SEND_ERROR_REPORTS", "false"),
        ("CLOUDFLARE_CF_FETCH_ENABLED", "false"),
        ("WRANGLER_HIDE_BANNER", "true"),
    ]);
    command
}

/// What wrangler logs (at debug level) once its proxy passes requests on to the Worker.
const PROXY_PASSES_REQUESTS: &str = "GET /cdn-cgi/ProxyWorker/play";

/// A free port of 127.0.0.1.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A Worker running under `wrangler dev --local`.
#[derive(Debug)]
pub struct WorkerProcess {
    child: Child,
    url: String,
    port: u16,
    /// Where wrangler's output goes (the Worker's console among it); printed if the test
    /// panics.
    log: tempfile::NamedTempFile,
}

impl WorkerProcess {
    /// Starts the built Worker of `dir` (its `wrangler.toml`) with state in `state`, and waits
    /// until the Worker answers `GET /` (with any status but a 5xx).
    pub fn start(dir: &Path, state: &Path) -> Self {
        Self::start_with_vars(dir, state, &[])
    }

    /// [`start`](Self::start) with Worker variables set (`--var NAME:VALUE`).
    pub fn start_with_vars(dir: &Path, state: &Path, vars: &[(&str, &str)]) -> Self {
        Self::start_with_config(dir, "wrangler.toml", state, vars)
    }

    /// [`start_with_vars`](Self::start_with_vars) with the wrangler configuration `config`
    /// (a file in `dir`) in place of `wrangler.toml`.
    pub fn start_with_config(
        dir: &Path,
        config: &str,
        state: &Path,
        vars: &[(&str, &str)],
    ) -> Self {
        Self::start_on_port(dir, config, state, vars, free_port())
    }

    /// [`start_with_config`](Self::start_with_config) on `port` of 127.0.0.1, for a Worker
    /// whose settings name its own URL (`DURABLE_MCP_OAUTH_RESOURCE`).
    pub fn start_on_port(
        dir: &Path,
        config: &str,
        state: &Path,
        vars: &[(&str, &str)],
        port: u16,
    ) -> Self {
        let worker = Self::spawn(dir, config, state, vars, port, "warn");
        worker.wait_ready();
        worker
    }

    /// [`start_with_config`](Self::start_with_config) without a request to the Worker, so
    /// that the first request a caller sends is the first its code serves (a cold start):
    /// waits until wrangler says it is ready and has let its proxy pass requests on, then
    /// until the port accepts a connection, closed at once with nothing sent. wrangler runs
    /// at `--log-level debug`, the only level at which it says the second.
    pub fn start_unrequested(dir: &Path, config: &str, state: &Path) -> Self {
        let port = free_port();
        let worker = Self::spawn(dir, config, state, &[], port, "debug");
        worker.wait_ready_unrequested();
        worker
    }

    /// Runs `wrangler dev` on `port` with its output in a temporary file; does not wait.
    fn spawn(
        dir: &Path,
        config: &str,
        state: &Path,
        vars: &[(&str, &str)],
        port: u16,
        log_level: &str,
    ) -> Self {
        let log = tempfile::NamedTempFile::new().expect("a file for wrangler's output");
        let output = || log.reopen().expect("wrangler's output file");
        let child = wrangler(dir)
            .args([
                "dev",
                "--local",
                "--ip",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--config",
                config,
            ])
            .arg("--persist-to")
            .arg(state)
            .args(["--log-level", log_level])
            .args(
                vars.iter()
                    .flat_map(|(name, value)| ["--var".to_owned(), format!("{name}:{value}")]),
            )
            .stdin(Stdio::null())
            .stdout(output())
            .stderr(output())
            .process_group(0)
            .spawn()
            .expect("start wrangler dev");
        WorkerProcess {
            child,
            url: format!("http://127.0.0.1:{port}"),
            port,
            log,
        }
    }

    fn wait_ready(&self) {
        let answers = || {
            Connection::open(([127, 0, 0, 1], self.port).into())
                .and_then(|mut connection| connection.request("GET", "/", &[], b""))
                .is_ok_and(|response| response.status < 500)
        };
        crate::wait::until_true(&format!("wrangler dev to answer on {}", self.url), answers);
    }

    /// Waits without a request: "Ready on" is printed once the Worker's runtime has loaded
    /// its script, but wrangler's proxy holds requests until it is told to pass them on (a
    /// few to tens of milliseconds later), which it logs as a request of its own.
    fn wait_ready_unrequested(&self) {
        let said = |line: &str| self.log().contains(line);
        crate::wait::until_true(&format!("wrangler dev to be ready on {}", self.url), || {
            said("Ready on") && said(PROXY_PASSES_REQUESTS)
        });
        let accepts =
            || TcpStream::connect(std::net::SocketAddr::from(([127, 0, 0, 1], self.port))).is_ok();
        crate::wait::until_true(&format!("a connection to {}", self.url), accepts);
    }

    /// What wrangler has printed so far: its own messages and the Worker's console output.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// The Worker's base URL (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The MCP endpoint's URL.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.url)
    }

    /// The port the Worker answers on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process group of wrangler and the processes it runs (workerd among them).
    pub fn process_group(&self) -> u32 {
        self.child.id()
    }

    /// A POST of `path` with `headers` and no body.
    pub fn post(&self, path: &str, headers: &[(&str, &str)]) -> crate::http::Response {
        Connection::open(([127, 0, 0, 1], self.port).into())
            .and_then(|mut connection| connection.request("POST", path, headers, b""))
            .unwrap_or_else(|error| panic!("POST {path}: {error}"))
    }

    /// SIGKILL to wrangler and workerd: nothing shuts down cleanly, as in a crash.
    pub fn kill(mut self) {
        self.signal("-KILL");
    }

    fn signal(&mut self, signal: &str) {
        // wrangler runs node and workerd children: signal the whole group.
        let _ = Command::new("kill")
            .args([signal, "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
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
        self.signal("-TERM");
        if std::thread::panicking() {
            eprintln!(
                "the output of wrangler dev at {}:\n{}",
                self.url,
                self.log()
            );
        }
    }
}

/// Builds the Worker crate `relative` (to the workspace root) once per test process, however
/// many tests ask; a failed build fails every test that asks.
pub fn build_worker_once(relative: &'static str) -> PathBuf {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static BUILT: OnceLock<Mutex<HashMap<&'static str, bool>>> = OnceLock::new();
    let dir = workspace_root().join(relative);
    let mut built = BUILT
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match built.get(relative) {
        Some(true) => {}
        Some(false) => panic!("the Worker {relative} failed to build (see the first test)"),
        None => {
            built.insert(relative, false);
            build_worker(&dir);
            built.insert(relative, true);
        }
    }
    dir
}

/// Serialises the tests of one process that run `wrangler dev` (about half a gigabyte and two
/// busy processes each): hold the guard for the life of the Worker.
pub fn one_worker_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static WORKERS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    WORKERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
