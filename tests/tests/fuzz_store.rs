//! Fuzz target: the row decoding of the SQLite store. Garbage is written into the columns of
//! real rows of the `task`, `steps` and `input_requests` tables of a database file (any SQLite
//! type in any column: integers of every size, reals, text, invalid UTF-8, blobs, NULL), then
//! the store is opened and read: `load` (both scopes), `load_input`, `list_tasks`,
//! `task_ids`. Invariant: a value or a `StoreError`, never a panic.
//!
//! The decoding is `core::schema` (`task_from_row`, `step_from_row`, `input_from_row` over the
//! `SqlRow` trait), which the Durable Object store (`cloudflare/sql_store.rs`) shares; only its
//! `SqlRow` over the JavaScript values of `SqlStorage` cannot run natively (it is wasm32 only),
//! and is not fuzzed here.

mod fuzzing;

use durable_mcp::native::SqliteStore;
use durable_mcp::store::LoadScope;
use durable_mcp::store::Store;
use proptest::prelude::*;
use rusqlite::types::Value as SqlValue;

const TASK_COLUMNS: &[&str] = &[
    "tool_name",
    "input",
    "status",
    "status_message",
    "status_meta",
    "status_published",
    "created_at",
    "last_updated_at",
    "finished_at",
    "ttl_ms",
    "poll_interval_ms",
    "result",
    "error_code",
    "error_message",
    "cancel_requested",
    "run_attempt",
    "generation",
    "next_run_at",
    "cut_next_sleep",
    "principal",
    "version",
    "list_scope",
];
const STEP_COLUMNS: &[&str] = &[
    "kind",
    "status",
    "result",
    "attempt",
    "next_attempt_at",
    "wake_at",
    "last_error",
    "seq",
    "created_at",
    "completed_at",
];
const INPUT_COLUMNS: &[&str] = &[
    "request",
    "response",
    "answered",
    "answered_at",
    "timeout_at",
    "timed_out",
    "blocking",
    "consumed",
    "seq",
    "created_at",
];

fn sql_value() -> impl Strategy<Value = SqlValue> {
    prop_oneof![
        Just(SqlValue::Null),
        any::<i64>().prop_map(SqlValue::Integer),
        prop_oneof![
            Just(-1i64),
            Just(0),
            Just(1),
            Just(i64::MAX),
            Just(i64::MIN),
            Just(u32::MAX as i64 + 1),
            Just(8_640_000_000_000_001)
        ]
        .prop_map(SqlValue::Integer),
        any::<f64>().prop_map(SqlValue::Real),
        prop::sample::select(
            &[
                "working",
                "input_required",
                "completed",
                "failed",
                "cancelled",
                "step",
                "sleep",
                "pending",
                "done",
                "{}",
                "null",
                "",
                "WORKING",
            ][..]
        )
        .prop_map(|s| SqlValue::Text(s.to_owned())),
        any::<String>().prop_map(SqlValue::Text),
        prop::collection::vec(any::<u8>(), 0..16).prop_map(SqlValue::Blob),
    ]
}

/// Which table, which column, what value.
fn corruption() -> impl Strategy<Value = (usize, usize, SqlValue)> {
    (0usize..3, 0usize..22, sql_value())
}

/// A database holding one task (a step and an input request in its journal), made once: each
/// case corrupts a copy of it.
fn seed() -> &'static [u8] {
    static SEED: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SEED.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tasks.db");
        drop(SqliteStore::open(&path).expect("open"));
        let connection = rusqlite::Connection::open(&path).expect("connect");
        connection
            .execute_batch(
                "INSERT INTO task (task_id, tool_name, input, status, status_published, \
                 created_at, last_updated_at, poll_interval_ms, cancel_requested, run_attempt, \
                 generation, cut_next_sleep, version, list_scope) \
                 VALUES ('t', 'tool', '{}', 'working', 0, 1, 1, 1000, 0, 1, 1, 0, 1, 'scope');
                 INSERT INTO steps (task_id, step_key, kind, status, attempt, seq, created_at) \
                 VALUES ('t', 'k', 'step', 'pending', 1, 1, 1);
                 INSERT INTO input_requests (task_id, key, request, answered, timed_out, \
                 blocking, consumed, seq, created_at) \
                 VALUES ('t', 'q', '{}', 0, 0, 1, 0, 2, 1);
                 PRAGMA journal_mode = DELETE;",
            )
            .expect("seed rows");
        drop(connection);
        std::fs::read(&path).expect("the seed database")
    })
}

/// A copy of the seed database with `corruptions` written straight into its rows.
fn corrupt(corruptions: &[(usize, usize, SqlValue)]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tasks.db");
    std::fs::write(&path, seed()).expect("copy the seed");
    let mut connection = rusqlite::Connection::open(&path).expect("connect");
    connection
        .pragma_update(None, "synchronous", "OFF")
        .expect("pragma");
    let tx = connection.transaction().expect("transaction");
    for (table, column, value) in corruptions {
        let (table, columns) = match table {
            0 => ("task", TASK_COLUMNS),
            1 => ("steps", STEP_COLUMNS),
            _ => ("input_requests", INPUT_COLUMNS),
        };
        let column = columns[column % columns.len()];
        // NOT NULL columns refuse a NULL: such a row cannot exist, and the update is skipped.
        let _ = tx.execute(&format!("UPDATE {table} SET {column} = ?1"), [value]);
    }
    tx.commit().expect("commit");
    (dir, "t".to_owned())
}

#[test]
fn corrupt_rows_load_or_fail_with_a_store_error() {
    let corruptions = prop::collection::vec(corruption(), 1..6);
    // A case costs a database file (about 25 ms): a long run does a twentieth of its cases.
    let cases = fuzzing::cases(100, 20);
    fuzzing::run_with("sqlite-rows", file!(), cases, corruptions, |corruptions| {
        let (dir, id) = corrupt(&corruptions);
        let outcome = std::panic::catch_unwind(|| {
            let store = SqliteStore::open(dir.path().join("tasks.db")).expect("reopen");
            let _ = store.load(&id, LoadScope::Full);
            let _ = store.load(&id, LoadScope::Control);
            let _ = store.load_input(&id, "q");
            let _ = store.list_tasks("scope", None, 10);
            let _ = store.task_ids();
        });
        prop_assert!(outcome.is_ok(), "reading {corruptions:?} panicked");
        Ok(())
    });
}
