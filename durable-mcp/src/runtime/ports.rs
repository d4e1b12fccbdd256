//! The ports a host implements: where rows live, what time it is, how to wait, when to wake.
//!
//! All are object-safe and carry no `Send` bound: a Worker's futures are `!Send`, and the same
//! task bodies must run on every host.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::core::{Applied, Guard, InputRow, LoadScope, TaskRecord, TaskState, Timestamp, Write};

/// A boxed future with no `Send` bound.
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A store that failed: the message says what and, where it can, how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// Synchronous, SQL-shaped access to task rows. Both SQLite APIs this crate runs on (rusqlite
/// and the Durable Object's `SqlStorage`) are synchronous, so this trait is too.
///
/// Every store must pass [`crate::testing::store_conformance`] (feature `testing`). Integer
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

/// The single wake-up of each task (an alarm, a timer).
pub trait Scheduler {
    /// Sets the task's one wake-up to `at`, replacing any earlier setting; `None` clears it.
    /// At that time the host calls [`crate::Engine::tick`] for the task.
    fn schedule(&self, task_id: &str, at: Option<Timestamp>);
}
