//! A task store of the application's own, as a user would write one for the native host
//! ([`NativeHost::store`](durable_mcp::native::NativeHost::store)): a type of its own that
//! implements [`Store`], here over a SQLite file of its choosing, opened by each worker
//! thread. `main` serves with it when `CONFORMANCE_STORE=own`, so that the black-box suite
//! runs against a host whose store is not its default (`cargo xtask clients`).

use std::path::PathBuf;

use durable_mcp::native::SqliteStore;
use durable_mcp::store::{
    Applied, Guard, InputRow, ListPosition, LoadScope, Store, StoreError, TaskRecord, TaskState,
    Write,
};

/// The application's store: one handle on the file, SQLite underneath.
#[derive(Debug)]
pub struct OwnStore {
    inner: SqliteStore,
}

impl OwnStore {
    /// What each worker thread of the host calls for its handle on the file `path`.
    pub fn opener(path: PathBuf) -> impl Fn() -> Result<OwnStore, StoreError> + Send + Sync {
        move || {
            Ok(OwnStore {
                inner: SqliteStore::open(&path)?,
            })
        }
    }
}

impl Store for OwnStore {
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
        self.inner.apply(task_id, guard, writes)
    }

    fn purge(&self, task_id: &str) -> Result<(), StoreError> {
        self.inner.purge(task_id)
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
