//! Runs an example server of this workspace as a child process on a free loopback port, with
//! fresh state, for black-box tests.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

/// A running example server.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    url: String,
    address: SocketAddr,
    data_dir: PathBuf,
    /// Where the server's stderr (its log) goes; printed if the test panics.
    log: tempfile::NamedTempFile,
}

/// The executable of workspace binary `name` (the binary of the package of the same name),
/// built first, once per test process, so that a test never runs a stale build. Under
/// `cargo test` it is built with the cargo that runs the tests, into the same target
/// directory; run outside cargo, it must exist.
pub fn workspace_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test binary>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lives in target/<profile>/deps");
    ensure_built(name, profile_dir);
    let binary = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is missing: build it first (`cargo build -p {name}`)",
        binary.display()
    );
    binary
}

fn ensure_built(name: &str, profile_dir: &Path) {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let Some(cargo) = std::env::var_os("CARGO") else {
        return;
    };
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if built.iter().any(|done| done == name) {
        return;
    }
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet", "--package", name, "--bin", name]);
    if profile_dir
        .file_name()
        .is_some_and(|profile| profile == "release")
    {
        command.arg("--release");
    }
    let status = command
        .status()
        .unwrap_or_else(|error| panic!("cannot run cargo to build {name}: {error}"));
    assert!(status.success(), "building {name} failed");
    built.push(name.to_owned());
}

impl ServerProcess {
    /// Starts workspace binary `name` with state in `data_dir` on a free port, and waits until
    /// it prints the URL it serves. Its log (stderr) goes to a file: see [`log`](Self::log).
    pub fn start(name: &str, data_dir: &Path, env: &[(&str, &str)]) -> Self {
        let log = tempfile::NamedTempFile::new().expect("a file for the server's log");
        let stderr = log.reopen().expect("the server's log file");
        let mut child = Command::new(workspace_binary(name))
            .env("PORT", "0")
            .env("DURABLE_MCP_DATA", data_dir)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {name}: {error}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line
                    .split_whitespace()
                    .find(|word| word.starts_with("http://"))
                {
                    let _ = sender.send(url.to_owned());
                }
            }
        });
        let url = match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                panic!("{name} did not print the URL it serves within 60 s");
            }
        };
        let address = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .and_then(|authority| authority.parse().ok())
            .unwrap_or_else(|| panic!("cannot read an address from {url:?}"));
        ServerProcess {
            child,
            url,
            address,
            data_dir: data_dir.to_owned(),
            log,
        }
    }

    /// What the server has written to stderr so far: its log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// The MCP endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The socket address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The state directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Asks the server to stop with SIGTERM and returns how it exited (`None` if it has not
    /// exited within `limit`, in which case it is killed).
    pub fn terminate(mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        crate::wait::within(limit, crate::wait::INTERVAL, || {
            self.child.try_wait().ok().flatten()
        })
    }

    /// Kills the server with SIGKILL (no shutdown code runs) and waits for it to exit.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("the log of the server at {}:\n{}", self.url, self.log());
        }
    }
}
