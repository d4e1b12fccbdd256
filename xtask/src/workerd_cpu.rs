//! The CPU time of the workerd process that runs a Worker under `wrangler dev`, read from
//! Linux's `/proc`: what a request costs the runtime (the Worker and its objects), apart from
//! wrangler's proxy in front of it and from the bench's own client. Unlike latency, CPU time
//! does not grow when the machine is busy with something else, and under many clients it is
//! what decides the throughput.

use std::fs;
use std::time::Duration;

/// `/proc` counts CPU time in ticks of 1/100 s on Linux, whatever the kernel's own rate.
const TICK: Duration = Duration::from_millis(10);

/// The workerd process that runs a Worker.
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
        let fields = stat_fields(self.pid)?;
        // utime and stime are the 14th and 15th fields of the line; 12th and 13th after the
        // command's closing parenthesis.
        let ticks: u64 = [11, 12]
            .iter()
            .map(|&at| fields.get(at)?.parse::<u64>().ok())
            .sum::<Option<u64>>()?;
        Some(TICK * u32::try_from(ticks).ok()?)
    }
}

fn process_group(pid: u32) -> Option<u32> {
    // pgrp is the 5th field of the line; the 3rd after the command.
    stat_fields(pid)?.get(2)?.parse().ok()
}

/// The fields of `/proc/<pid>/stat` after the command, which is in parentheses and may hold
/// spaces.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    Some(rest.split(' ').map(str::to_owned).collect())
}
