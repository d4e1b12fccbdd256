//! The store conformance suite against every store.

use durable_mcp::native::SqliteStore;
use durable_mcp::testing::{MemoryStore, store_conformance};

#[test]
fn memory_store_conforms() {
    store_conformance(MemoryStore::new);
}

#[test]
fn sqlite_file_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = std::cell::Cell::new(0);
    store_conformance(|| {
        counter.set(counter.get() + 1);
        let path = dir.path().join(format!("store-{}.db", counter.get()));
        SqliteStore::open(path).expect("open")
    });
}

#[test]
fn sqlite_in_memory_store_conforms() {
    store_conformance(|| SqliteStore::in_memory().expect("open"));
}

#[test]
fn a_reopened_sqlite_file_keeps_every_row() {
    use durable_mcp::store::Store;
    use durable_mcp::store::{Guard, LoadScope, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tasks.db");
    let record = {
        let store = SqliteStore::open(&path).expect("open");
        let new = durable_mcp::__internals::NewTask {
            task_id: "t1".into(),
            tool_name: "tool".into(),
            input: "{}".into(),
            ttl: None,
            poll_interval: std::time::Duration::from_secs(1),
            principal: None,
            list_scope: None,
            code_version: Some("1.0.0".into()),
            parent: None,
        };
        let record =
            durable_mcp::__internals::control::new_task_record(new, durable_mcp::Timestamp(5));
        store.create(&record).expect("create");
        let publish = Write::PublishStatus {
            message: "kept".into(),
            meta: None,
            published: 1,
            at: durable_mcp::Timestamp(6),
        };
        store
            .apply("t1", Guard::default(), &[publish])
            .expect("apply");
        store
            .load("t1", LoadScope::Full)
            .expect("load")
            .expect("task")
    };
    let reopened = SqliteStore::open(&path).expect("reopen");
    assert_eq!(
        reopened.load("t1", LoadScope::Full).expect("load"),
        Some(record)
    );
}

/// A store that implements only what `Store` requires, so that the suite checks the provided
/// methods (`list_every_task` reads every task through `task_ids` and `load`).
struct RequiredOnly(durable_mcp::testing::MemoryStore);

impl durable_mcp::store::Store for RequiredOnly {
    fn create(
        &self,
        task: &durable_mcp::store::TaskRecord,
    ) -> Result<durable_mcp::store::TaskRecord, durable_mcp::store::StoreError> {
        self.0.create(task)
    }

    fn load(
        &self,
        task_id: &str,
        scope: durable_mcp::store::LoadScope,
    ) -> Result<Option<durable_mcp::store::TaskState>, durable_mcp::store::StoreError> {
        self.0.load(task_id, scope)
    }

    fn load_input(
        &self,
        task_id: &str,
        key: &str,
    ) -> Result<Option<durable_mcp::store::InputRow>, durable_mcp::store::StoreError> {
        self.0.load_input(task_id, key)
    }

    fn apply(
        &self,
        task_id: &str,
        guard: durable_mcp::store::Guard,
        writes: &[durable_mcp::store::Write],
    ) -> Result<durable_mcp::store::Applied, durable_mcp::store::StoreError> {
        self.0.apply(task_id, guard, writes)
    }

    fn purge(&self, task_id: &str) -> Result<(), durable_mcp::store::StoreError> {
        self.0.purge(task_id)
    }

    fn task_ids(&self) -> Result<Vec<String>, durable_mcp::store::StoreError> {
        self.0.task_ids()
    }

    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&durable_mcp::store::ListPosition>,
        limit: usize,
    ) -> Result<Vec<durable_mcp::store::TaskRecord>, durable_mcp::store::StoreError> {
        self.0.list_tasks(scope, after, limit)
    }
}

#[test]
fn the_provided_methods_conform() {
    store_conformance(|| RequiredOnly(MemoryStore::new()));
}
