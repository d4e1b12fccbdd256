//! The server under test as a child process on a port chosen before it starts, so that a
//! client can knock from the moment it is spawned, and the moments of its restart.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::http::Connection;
use crate::mcp::McpClient;

/// How long a start may take to print its URL, or to answer its first request.
const START_LIMIT: Duration = Duration::from_secs(120);

/// A free loopback port: bound and released at once. The server binds it a moment later.
pub(super) fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|e| e.to_string())
}

/// The running server; SIGKILLed when dropped.
pub(super) struct Host {
    child: Child,
    /// When the process was spawned (just before).
    pub(super) spawned_at: Instant,
    /// The first URL line the server prints, and when it was read.
    url_line: Receiver<(Instant, String)>,
    /// The endpoint.
    pub(super) address: SocketAddr,
}

impl Host {
    /// Spawns `binary` on `address` with its state in `data_dir` and `env` on top of this
    /// process's environment. Returns at once: see [`wait_url_line`](Self::wait_url_line).
    pub(super) fn spawn(
        binary: &Path,
        data_dir: &Path,
        address: SocketAddr,
        env: &[(String, String)],
    ) -> Result<Host, String> {
        let mut command = Command::new(binary);
        command
            .env("PORT", address.port().to_string())
            .env("DURABLE_MCP_DATA", data_dir)
            // Tens of thousands of tasks: their events would drown the output.
            .env("RUST_LOG", "warn")
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let spawned_at = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let stdout = child.stdout.take().ok_or("no piped stdout")?;
        let (sender, url_line) = mpsc::channel();
        // Reads every line, so that the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                    let _ = sender.send((Instant::now(), url.to_owned()));
                }
            }
        });
        Ok(Host {
            child,
            spawned_at,
            url_line,
            address,
        })
    }

    /// The MCP endpoint's URL.
    pub(super) fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// The process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the URL line; the time from the spawn to it. Fails if the server exits
    /// first or prints another address.
    pub(super) fn wait_url_line(&mut self) -> Result<Duration, String> {
        let (at, url) =
            self.url_line
                .recv_timeout(START_LIMIT)
                .map_err(|_| match self.child.try_wait() {
                    Ok(Some(status)) => format!("the server exited ({status}) before serving"),
                    _ => format!(
                        "the server printed no URL within {} s",
                        START_LIMIT.as_secs()
                    ),
                })?;
        if url != self.url() {
            return Err(format!("the server serves {url}, not {}", self.url()));
        }
        Ok(at - self.spawned_at)
    }

    /// Sends `tasks/get` of `task_id` from the spawn on, over and over (a fresh connection
    /// each, a millisecond apart while refused), until one is answered with a task; the time
    /// from the spawn to that answer.
    pub(super) fn first_answer(&mut self, task_id: &str) -> Result<Duration, String> {
        let client = McpClient::new(&self.url());
        let (body, headers) = client.build("tasks/get", json!({ "taskId": task_id }), true);
        let headers = crate::http::borrowed(&headers);
        let body = body.to_string();
        // A millisecond apart: the time to the first answer is a figure of the benchmark.
        let time_left = START_LIMIT.saturating_sub(self.spawned_at.elapsed());
        let outcome = crate::wait::within(time_left, Duration::from_millis(1), || {
            let answer = Connection::open(self.address).and_then(|mut connection| {
                connection.request("POST", "/mcp", &headers, body.as_bytes())
            });
            let answered = Instant::now();
            if let Ok(response) = answer {
                let result = &response.json()["result"];
                if response.status == 200 && result["taskId"] == task_id {
                    return Some(Ok(answered - self.spawned_at));
                }
            }
            match self.child.try_wait() {
                Ok(Some(status)) => Some(Err(format!(
                    "the server exited ({status}) before answering"
                ))),
                _ => None,
            }
        });
        outcome.unwrap_or_else(|| {
            Err(format!(
                "the server answered no tasks/get within {} s",
                START_LIMIT.as_secs()
            ))
        })
    }

    /// SIGKILL: no shutdown code runs. Waits until the process is gone.
    pub(super) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `/proc/<pid>` says of a process: its peak resident memory and its CPU time so far.
/// `None` off Linux or once the process is gone.
pub(super) fn usage(pid: u32) -> Option<(u64, Duration)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let hwm_kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and
    // 13th, in clock ticks of 1/100 s.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((hwm_kib, Duration::from_millis(ticks * 10)))
}
