//! A native host of the workspace (a binary of `examples/`) as a child process, on a free
//! port of 127.0.0.1 with a fresh state directory: the fixture server of `cargo xtask
//! clients`, the story-demo host of `cargo xtask browser`, and the servers the benches measure.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::Result;

/// A native host's announcement on stdout (after the program's name: `durable-mcp: `, or an
/// application's own); the MCP endpoint's URL follows it.
const SERVING: &str = "serving MCP at ";

/// How long a host may take to announce its URL.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running native host; killed when stopped or dropped, and its state directory removed.
#[derive(Debug)]
pub struct NativeServer {
    /// The host process.
    child: Child,
    /// The MCP endpoint it announced.
    url: String,
    /// Its `DURABLE_MCP_DATA`; dropped after the process is killed.
    state: tempfile::TempDir,
}

impl NativeServer {
    /// Starts `binary` with `PORT=0`, its state in a fresh directory (`DURABLE_MCP_DATA`) and
    /// `env` on top (which may set `PORT` too), and waits until it announces its URL, which
    /// must be on 127.0.0.1. Its output (stderr, and stdout line by line) goes to `log`, or
    /// without one its stderr goes to ours.
    pub fn start(binary: &Path, env: &[(&str, &str)], log: Option<&Path>) -> Result<NativeServer> {
        let state = tempfile::tempdir()?;
        let log_file = log
            .map(|log| {
                File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))
            })
            .transpose()?;
        let stderr = match &log_file {
            Some(file) => Stdio::from(file.try_clone()?),
            None => Stdio::inherit(),
        };
        let mut child = Command::new(binary)
            .env("PORT", "0")
            .env("DURABLE_MCP_DATA", state.path())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the server's stdout is not piped")?;
        let (sender, receiver) = mpsc::channel();
        // Reads the announcement, then keeps draining stdout so the server never blocks on it.
        thread::spawn(move || {
            let (mut sender, mut log_file) = (Some(sender), log_file);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(file) = &mut log_file {
                    let _ = writeln!(file, "{line}");
                }
                if let Some((_, url)) = line.trim().split_once(SERVING)
                    && let Some(sender) = sender.take()
                {
                    let _ = sender.send(url.to_owned());
                }
            }
        });
        let mut server = NativeServer {
            child,
            url: String::new(),
            state,
        };
        let see_log = log.map_or_else(String::new, |log| format!("; see {}", log.display()));
        server.url = receiver.recv_timeout(START_TIMEOUT).map_err(|_| {
            let why = match server.child.try_wait().ok().flatten() {
                Some(status) => format!("it exited ({status})"),
                None => "no announcement".to_owned(),
            };
            format!(
                "{} did not announce its URL within {START_TIMEOUT:?}: {why}{see_log}",
                binary.display()
            )
        })?;
        // Every server started here listens on loopback only.
        if !server.url.starts_with("http://127.0.0.1:") {
            return Err(format!("the server announced {}, not 127.0.0.1", server.url).into());
        }
        Ok(server)
    }

    /// The MCP endpoint's URL, as the server announced it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's state directory.
    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    /// Stops the server; returns its exit status if it had already exited by itself.
    pub fn stop(mut self) -> Option<ExitStatus> {
        let exited = self.child.try_wait().ok().flatten();
        self.kill();
        exited
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NativeServer {
    fn drop(&mut self) {
        self.kill();
    }
}
