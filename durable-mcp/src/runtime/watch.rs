//! Following a task's changes as they commit: the engine tells each watcher of a task its
//! snapshot after every write that may change what a client sees (its status, status message,
//! input requests, outcome). Nothing polls: the write that made a change announces it, on the
//! thread that made it, so watchers hear of a task's changes in commit order.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use futures_channel::mpsc::UnboundedSender;
use futures_util::stream::LocalBoxStream;

use super::ports::{Store, StoreError};
use crate::core::control;
use crate::core::{
    Applied, Guard, InputRow, ListPosition, LoadScope, TaskRecord, TaskSnapshot, TaskState, Write,
};

/// A task's snapshots as they change: the first is the task as it was when the watch began,
/// then one after each committed write that may have changed it, in commit order. A write
/// that changed nothing a client sees may repeat the last snapshot. The stream ends when the
/// task is purged or the way to it broke (its host stopped, a connection dropped): watch it
/// again to get its current state.
pub type TaskChanges = LocalBoxStream<'static, TaskSnapshot>;

/// Where one watcher's snapshots go.
pub(crate) trait Sink {
    /// Sends a snapshot; `false` once nobody receives them (the watcher was dropped).
    fn send(&self, snapshot: &TaskSnapshot) -> bool;

    /// Whether nobody receives the snapshots any more.
    fn is_closed(&self) -> bool;
}

/// A watcher in the same process, on this thread or another.
impl Sink for UnboundedSender<TaskSnapshot> {
    fn send(&self, snapshot: &TaskSnapshot) -> bool {
        self.unbounded_send(snapshot.clone()).is_ok()
    }

    fn is_closed(&self) -> bool {
        UnboundedSender::is_closed(self)
    }
}

/// The watchers of one engine's tasks, by task id.
#[derive(Default)]
pub(crate) struct Watchers {
    by_task: RefCell<HashMap<String, Vec<Box<dyn Sink>>>>,
}

impl Watchers {
    /// Adds a watcher of `task_id`, and drops the watchers nobody receives any more.
    pub(crate) fn add(&self, task_id: &str, sink: Box<dyn Sink>) {
        let mut by_task = self.by_task.borrow_mut();
        // A watcher of a task that never changes again (it ended) is dropped here, since no
        // publish will find it.
        by_task.retain(|_, sinks| {
            sinks.retain(|sink| !sink.is_closed());
            !sinks.is_empty()
        });
        by_task.entry(task_id.to_owned()).or_default().push(sink);
    }

    /// Whether anyone watches `task_id`.
    pub(crate) fn watching(&self, task_id: &str) -> bool {
        self.by_task.borrow().contains_key(task_id)
    }

    /// Tells each watcher of the snapshot's task, and drops those nobody receives any more.
    pub(crate) fn publish(&self, snapshot: &TaskSnapshot) {
        let mut by_task = self.by_task.borrow_mut();
        let Some(sinks) = by_task.get_mut(&snapshot.task_id) else {
            return;
        };
        sinks.retain(|sink| sink.send(snapshot));
        if sinks.is_empty() {
            by_task.remove(&snapshot.task_id);
        }
    }

    /// Drops every watcher of `task_id` (the task is gone): their streams end.
    pub(crate) fn forget(&self, task_id: &str) {
        self.by_task.borrow_mut().remove(task_id);
    }
}

/// A store that tells the engine's watchers of each commit that may change what a client
/// sees of a task. Every write of an engine goes through its store, so this one place sees
/// them all: the control plane's, the tick's, and an activation's.
pub(crate) struct PublishingStore {
    pub(crate) inner: Rc<dyn Store>,
    pub(crate) watchers: Rc<Watchers>,
}

impl PublishingStore {
    fn publish(&self, task_id: &str) -> Result<(), StoreError> {
        if !self.watchers.watching(task_id) {
            return Ok(());
        }
        match self.inner.load(task_id, LoadScope::Control)? {
            Some(state) => self.watchers.publish(&control::snapshot(&state)),
            None => self.watchers.forget(task_id),
        }
        Ok(())
    }
}

/// Whether `writes` may change what a client sees: the task row, or an input request.
fn visible(writes: &[Write]) -> bool {
    writes
        .iter()
        .any(|write| write.changes_task() || matches!(write, Write::PutInput(_)))
}

impl Store for PublishingStore {
    fn create(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError> {
        self.inner.create(task)
    }

    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, StoreError> {
        self.inner.load(task_id, scope)
    }

    fn load_input(&self, task_id: &str, key: &str) -> Result<Option<InputRow>, StoreError> {
        self.inner.load_input(task_id, key)
    }

    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, StoreError> {
        let applied = self.inner.apply(task_id, guard, writes)?;
        if applied != Applied::Stale && visible(writes) {
            // The write is durable whatever this read says; a watcher that misses it gets the
            // next change, or the current state when it watches again.
            let _ = self.publish(task_id);
        }
        Ok(applied)
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.inner.flush()
    }

    fn purge(&self, task_id: &str) -> Result<(), StoreError> {
        self.inner.purge(task_id)?;
        self.watchers.forget(task_id);
        Ok(())
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        self.inner.task_ids()
    }

    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.list_tasks(scope, after, limit)
    }

    fn list_every_task(
        &self,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.list_every_task(after, limit)
    }
}
