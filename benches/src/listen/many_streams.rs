//! The native host holding many open listen streams: the memory a stream holds, and the CPU
//! time a change costs the host with the streams open and without.
//!
//! One fresh host. Every task is created first: `rounds` × 3 × `streams` `watched_errand`s,
//! each waiting at `input_required` (the store says so). Each round then answers three sets of
//! `streams` tasks with `tasks/update` (the change), one request at a time on a kept
//! connection, and takes the host's CPU time (`/proc/<pid>/stat`) from before the first to
//! after the last set's tasks completed (the store says so, read without asking the host):
//!
//! 1. **none open**: no stream is open;
//! 2. the streams are opened, each following one task of the third set, and each read until
//!    its task shows `input_required` (the host holds them then); in the first round the
//!    host's `VmRSS` is read just before and just after;
//! 3. **open, unfollowed**: the second set, which no stream follows, while the streams are
//!    open (what open streams add to changes they do not follow);
//! 4. **open, followed**: the third set, each change pushed to its stream (the task's
//!    `working`, `going` and `completed`) and the stream ended; the CPU time runs until the
//!    bench has read every stream to its end.
//!
//! Each figure is the CPU time of its sets over all rounds divided by the changes made.

use std::path::Path;
use std::time::Duration;

use durable_mcp::TaskStatus;
use durable_mcp_tests::listen::Listen;
use xtask::Result;
use xtask::server::NativeServer;

use super::endpoint::{Endpoint, Write};
use super::store::Store;
use super::stream;
use crate::native::start_server;
use crate::procfs::{cpu_time, status_kib};

/// What the measurement found.
#[derive(Debug)]
pub(super) struct ManyStreams {
    /// The host's RSS with every task waiting and no stream open, in KiB.
    pub(super) rss_before_kib: u64,
    /// The host's RSS with the streams open, in KiB.
    pub(super) rss_after_kib: u64,
    /// The host's CPU time per change with no stream open.
    pub(super) cpu_none: Duration,
    /// The same with the streams open, the changed tasks followed by none.
    pub(super) cpu_unfollowed: Duration,
    /// The same with the streams open, each changed task followed by one.
    pub(super) cpu_followed: Duration,
    /// The changes of each kind.
    pub(super) changes: usize,
}

/// Runs the measurement on a fresh host from `binary`, with `streams` streams over `rounds`
/// rounds.
pub(super) fn measure(binary: &Path, streams: usize, rounds: usize) -> Result<ManyStreams> {
    let server = start_server(binary, None, &super::MANY_STREAMS_SETTINGS)?;
    let store = Store::open(&server)?;
    let mut endpoint = Endpoint::open(server.url())?;
    let per_round = 3 * streams;
    let ids = (0..per_round * rounds)
        .map(|_| endpoint.create(Write::Update))
        .collect::<Result<Vec<_>>>()?;
    store.wait_for(TaskStatus::InputRequired, ids.len())?;
    let mut changes = Changes {
        endpoint,
        store,
        server: &server,
        done: 0,
    };
    let mut cpu = [Duration::ZERO; 3];
    let mut rss = None;
    for round in ids.chunks(per_round) {
        let (none, rest) = round.split_at(streams);
        let (unfollowed, followed) = rest.split_at(streams);
        cpu[0] += changes.answer(none, || Ok(()))?;
        let before = status_kib(server.pid(), "VmRSS")?;
        let mut open = followed
            .iter()
            .map(|id| changes.follow(id))
            .collect::<Result<Vec<_>>>()?;
        let after = status_kib(server.pid(), "VmRSS")?;
        rss.get_or_insert((before, after));
        cpu[1] += changes.answer(unfollowed, || Ok(()))?;
        cpu[2] += changes.answer(followed, || open.iter_mut().try_for_each(stream::to_end))?;
    }
    let (rss_before_kib, rss_after_kib) = rss.ok_or("no round was run")?;
    let made = streams * rounds;
    let per_change = |total: Duration| total / u32::try_from(made.max(1)).unwrap_or(u32::MAX);
    Ok(ManyStreams {
        rss_before_kib,
        rss_after_kib,
        cpu_none: per_change(cpu[0]),
        cpu_unfollowed: per_change(cpu[1]),
        cpu_followed: per_change(cpu[2]),
        changes: made,
    })
}

/// Makes the changes, and tells when the host is done with them.
struct Changes<'a> {
    endpoint: Endpoint,
    store: Store,
    server: &'a NativeServer,
    /// Tasks answered so far, every one completed once the host is done.
    done: usize,
}

impl Changes<'_> {
    /// Opens a stream following task `id` and reads it until the task waits for input.
    fn follow(&mut self, id: &str) -> Result<Listen> {
        let mut listen = stream::open(self.endpoint.client(), &[id])?;
        stream::until_status(&mut listen, Write::Update.resting())?;
        Ok(listen)
    }

    /// Answers every task of `ids`, waits until each has completed and `then` has run: the
    /// host's CPU time over it all.
    fn answer(&mut self, ids: &[String], then: impl FnOnce() -> Result<()>) -> Result<Duration> {
        self.endpoint.keep_fresh()?;
        let before = cpu_time(self.server.pid())?;
        for id in ids {
            self.endpoint
                .call(Write::Update.method(), Write::Update.params(id))?;
        }
        self.done += ids.len();
        self.store.wait_for(TaskStatus::Completed, self.done)?;
        then()?;
        Ok(cpu_time(self.server.pid())?.saturating_sub(before))
    }
}
