//! The ports a host implements: where rows live, what time it is, how to wait, when to wake.
//!
//! All are object-safe and carry no `Send` bound: a Worker's futures are `!Send`, and the same
//! task bodies must run on every host.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::core::{
    Applied, Guard, InputRow, ListPosition, LoadScope, TaskRecord, TaskState, Timestamp, Write,
};

/// A boxed future with no `Send` bound.
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A store that failed: the message says what and, where it can, how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// Synchronous, SQL-shaped access to task rows. Both SQLite APIs this crate runs on (rusqlite
/// and the Durable Object's `SqlStorage`) are synchronous, so this trait is too.
///
/// Every store must pass `testing::store_conformance` (feature `testing`). Integer
/// columns need only keep values up to 2^53 − 1 exactly (a Durable Object's SQLite binds
/// JavaScript numbers); counters and millisecond timestamps stay far below that.
pub trait Store {
    /// Inserts `task` unless a task with its id exists, and returns the stored row either way.
    /// The row is durable when this returns.
    fn create(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError>;

    /// Reads a task and its journal in one read: all steps for [`LoadScope::Full`], only the
    /// pending ones for [`LoadScope::Control`]; input requests always. `None` if there is no
    /// such task. Never writes.
    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, StoreError>;

    /// Reads one input request row, fresh.
    fn load_input(&self, task_id: &str, key: &str) -> Result<Option<InputRow>, StoreError>;

    /// Atomically: checks `guard` against the task row and applies `writes` in order, bumping
    /// the row's version once if any write [changes the task row](Write::changes_task); or, if
    /// the guard fails or the task is gone, writes nothing and returns [`Applied::Stale`].
    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, StoreError>;

    /// Writes at once whatever the store holds back to write later (a Durable Object store
    /// keeps a turn's step rows and inserts them together at the end of the turn). The engine
    /// calls it before a step attempt's closure runs, so that a request the closure sends is
    /// held by the host's output gate until the steps before it are durable. Stores that write
    /// at once keep the default, which does nothing.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Deletes every row of the task. Deleting a missing task is not an error.
    fn purge(&self, task_id: &str) -> Result<(), StoreError>;

    /// The ids of every stored task, oldest first (for recovery after a restart).
    fn task_ids(&self) -> Result<Vec<String>, StoreError>;

    /// Up to `limit` task rows created with the listing scope `scope`, in
    /// [`ListPosition`] order (oldest first, then by id), strictly after `after` (from the
    /// first when `None`). Tasks without a scope are never returned; a purged task is gone.
    /// Filters by nothing else (the engine decides what a listing shows). Never writes.
    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError>;

    /// Up to `limit` task rows of every listing scope and of none, in [`ListPosition`] order,
    /// strictly after `after`: what an operator's inspector pages through. Never writes.
    ///
    /// The provided implementation loads every task to sort them; a store that can read its
    /// tasks in that order should say so here.
    fn list_every_task(
        &self,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let mut tasks = Vec::new();
        for task_id in self.task_ids()? {
            if let Some(state) = self.load(&task_id, LoadScope::Control)? {
                tasks.push(state.task);
            }
        }
        tasks.retain(|task| after.is_none_or(|after| ListPosition::of(task) > *after));
        tasks.sort_by_key(ListPosition::of);
        tasks.truncate(limit);
        Ok(tasks)
    }
}

/// The current time.
pub trait Clock {
    /// Milliseconds since the epoch, now.
    fn now(&self) -> Timestamp;
}

/// Waiting for a while inside an activation (per-attempt step timeouts).
pub trait Timer {
    /// A future that completes after `duration`.
    fn delay(&self, duration: Duration) -> LocalBoxFuture<'static, ()>;

    /// Lets the host's other work run before the body goes on (a long run of steps calls
    /// this regularly). The default wakes itself at once, which is enough for an executor that
    /// interleaves its tasks; an event loop that serves requests only between macrotasks (a
    /// Durable Object) overrides it with a zero-length timer.
    fn yield_now(&self) -> LocalBoxFuture<'static, ()> {
        Box::pin(super::step::yield_now())
    }
}

/// Splits a wait of `duration` into consecutive waits of at most `longest` each, for timers
/// that cannot wait longer in one go (JavaScript's `setTimeout` takes 32-bit milliseconds and
/// fires at once past them). A zero `duration` is one zero wait; a zero `longest` does not split.
#[cfg_attr(not(cloudflare_host), allow(dead_code))]
pub fn delay_chunks(duration: Duration, longest: Duration) -> DelayChunks {
    DelayChunks {
        left: Some(duration),
        longest,
    }
}

/// The waits of [`delay_chunks`].
#[derive(Clone, Debug)]
#[cfg_attr(not(cloudflare_host), allow(dead_code))]
pub struct DelayChunks {
    /// What is left to wait; `None` once every chunk was given.
    left: Option<Duration>,
    longest: Duration,
}

impl Iterator for DelayChunks {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let left = self.left?;
        if self.longest.is_zero() || left <= self.longest {
            self.left = None;
            return Some(left);
        }
        self.left = Some(left - self.longest);
        Some(self.longest)
    }
}

/// The single wake-up of each task (an alarm, a timer).
pub trait Scheduler {
    /// Sets the task's one wake-up to `at`, replacing any earlier setting; `None` clears it.
    /// At that time the host calls [`crate::runtime::Engine::tick`] for the task.
    fn schedule(&self, task_id: &str, at: Option<Timestamp>);
}

#[cfg(test)]
mod tests {
    use super::*;

    const JS_LONGEST: Duration = Duration::from_millis(i32::MAX as u64);

    fn millis(chunks: DelayChunks) -> Vec<u64> {
        chunks
            .map(|d| u64::try_from(d.as_millis()).unwrap())
            .collect()
    }

    #[test]
    fn a_short_wait_is_one_chunk() {
        assert_eq!(millis(delay_chunks(Duration::ZERO, JS_LONGEST)), [0]);
        assert_eq!(
            millis(delay_chunks(Duration::from_millis(5), JS_LONGEST)),
            [5]
        );
        assert_eq!(
            millis(delay_chunks(JS_LONGEST, JS_LONGEST)),
            [i32::MAX as u64]
        );
    }

    #[test]
    fn a_long_wait_is_cut_into_chunks_a_timer_can_hold() {
        let long = Duration::from_millis(1 << 31);
        assert_eq!(millis(delay_chunks(long, JS_LONGEST)), [i32::MAX as u64, 1]);
        let longer = Duration::from_millis(2 * i32::MAX as u64 + 7);
        assert_eq!(
            millis(delay_chunks(longer, JS_LONGEST)),
            [i32::MAX as u64, i32::MAX as u64, 7]
        );
        // Sub-millisecond remainders are kept, not lost.
        let odd = JS_LONGEST + Duration::from_micros(1);
        let chunks: Vec<_> = delay_chunks(odd, JS_LONGEST).collect();
        assert_eq!(chunks, [JS_LONGEST, Duration::from_micros(1)]);
    }

    #[test]
    fn the_longest_wait_never_overflows_a_chunk() {
        let mut chunks = delay_chunks(Duration::MAX, JS_LONGEST);
        for _ in 0..1_000 {
            assert_eq!(chunks.next(), Some(JS_LONGEST));
        }
        assert_eq!(
            millis(delay_chunks(Duration::from_secs(3), Duration::ZERO)),
            [3_000],
            "a zero limit does not split"
        );
    }
}
