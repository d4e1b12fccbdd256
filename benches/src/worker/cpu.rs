//! The CPU time of the workerd process that runs a Worker under `wrangler dev`: what a request
//! costs the runtime (the Worker and its objects), apart from wrangler's proxy in front of it
//! and from the bench's own client. Unlike latency, CPU time does not grow when the machine is
//! busy with something else, and under many clients it is what decides the throughput.

use std::fs;
use std::time::Duration;

use crate::procfs::{cpu_time, process_group};

/// The workerd process that runs a Worker.
#[derive(Debug)]
pub struct Runtime {
    pid: u32,
}

impl Runtime {
    /// The runtime of the `wrangler dev` started as process group `group`, serving on
    /// `port`. wrangler runs two workerd processes: its proxy, listening on `port`, and the
    /// runtime, listening on a port of its own. `None` where there is no `/proc`, or if
    /// wrangler's processes are not as described.
    pub fn of_group(group: u32, port: u16) -> Option<Runtime> {
        let proxy_socket = format!("127.0.0.1:{port}");
        fs::read_dir("/proc").ok()?.find_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let command = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let command = String::from_utf8_lossy(&command);
            let is_runtime = command.contains("workerd")
                && command.contains("serve")
                && !command.contains(&proxy_socket);
            (is_runtime && process_group(pid)? == group).then_some(Runtime { pid })
        })
    }

    /// The user and system CPU time the process has used so far.
    pub fn cpu(&self) -> Option<Duration> {
        cpu_time(self.pid).ok()
    }
}
