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
