//! Linux's `/proc`, as the benches read it: a process's memory, CPU time and process group.

use std::fmt::Display;
use std::time::Duration;

use xtask::Result;

/// Clock ticks per second of `utime` and `stime` in `/proc/<pid>/stat` (`USER_HZ`, 100 on
/// every Linux architecture, whatever the kernel's own rate).
const USER_HZ: u64 = 100;

/// A field of `/proc/<pid>/status` given in kB (`VmRSS`, `VmHWM`), in KiB; `pid` may be
/// `self`.
pub fn status_kib(pid: impl Display, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))?;
    Ok(kib.trim().parse()?)
}

/// The CPU time (user and system, every thread) process `pid` has used, to the clock tick.
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let fields = stat_fields(pid)?;
    // utime and stime are fields 14 and 15 of the line: the 12th and 13th after the state.
    let ticks = |index: usize| -> Result<u64> {
        Ok(fields
            .get(index)
            .ok_or("a short /proc stat line")?
            .parse()?)
    };
    let ticks = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(ticks * 1000 / USER_HZ))
}

/// The process group of process `pid`.
pub fn process_group(pid: u32) -> Option<u32> {
    // pgrp is field 5 of the line; the 3rd after the command.
    stat_fields(pid).ok()?.get(2)?.parse().ok()
}

/// The fields of `/proc/<pid>/stat` after the command, which is in parentheses and may hold
/// spaces: the state first.
fn stat_fields(pid: u32) -> Result<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let (_, rest) = stat
        .rsplit_once(')')
        .ok_or("a /proc stat line without a command name")?;
    Ok(rest.split_whitespace().map(str::to_owned).collect())
}
