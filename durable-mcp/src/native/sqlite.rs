//! The SQLite store of the native host: one file (WAL), every task's rows keyed by task id.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::types::{Value as SqliteValue, ValueRef};
use rusqlite::{
    Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params_from_iter,
};

use crate::core::schema::{self, RowError, SqlRow, SqlValue};
use crate::core::{
    Applied, Guard, InputRow, ListPosition, LoadScope, TaskRecord, TaskState, Write,
};
use crate::runtime::{Store, StoreError};

/// A [`Store`] on a SQLite database file, through rusqlite (bundled SQLite).
///
/// The database runs in WAL mode with `synchronous = NORMAL`: a commit survives the process
/// being killed at any point; a power loss may take the last commits back, never corrupt the
/// file. Statements are prepared once and cached.
///
/// Every write goes through one connection behind a lock: SQLite takes one writer at a time
/// anyway, and a lock hands the turn over at once where SQLite's busy handler would sleep. The
/// native host gives each worker thread a store of its own that shares that writer and reads
/// through a connection of its own, so that reads on one thread never wait for another's.
///
/// A transaction that writes begins with `BEGIN IMMEDIATE` (`write_transaction`), so that
/// waiting for SQLite's write lock goes through the busy handler (`busy_timeout`); a read-only
/// transaction begins deferred.
pub struct SqliteStore {
    writer: Arc<Mutex<Connection>>,
    /// The connection reads go through, when not the writer's; `None` on an in-memory
    /// database, which a second connection would not see.
    reader: Option<Mutex<Connection>>,
    /// The database file, to open readers on; `None` in memory.
    path: Option<PathBuf>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the database at `path` and its schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let connection = Connection::open(path).map_err(|e| {
            StoreError(format!(
                "cannot open the SQLite database {}: {e}; check that its directory exists and is \
                 writable",
                path.display()
            ))
        })?;
        let mut store = Self::with_connection(connection)?;
        store.path = Some(path.to_owned());
        Ok(store)
    }

    /// A store on a fresh in-memory database (for tests).
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::with_connection(Connection::open_in_memory().map_err(sql_error)?)
    }

    fn with_connection(mut connection: Connection) -> Result<Self, StoreError> {
        configure(&connection)?;
        upgrade_schema(&mut connection).map_err(sql_error)?;
        connection.set_prepared_statement_cache_capacity(32);
        Ok(SqliteStore {
            writer: Arc::new(Mutex::new(connection)),
            reader: None,
            path: None,
        })
    }

    /// A store on the same database that writes through this store's connection and reads
    /// through a new one of its own (through the writer's on an in-memory database).
    pub(crate) fn reader(&self) -> Result<Self, StoreError> {
        let reader = match &self.path {
            Some(path) => {
                let connection = Connection::open(path).map_err(sql_error)?;
                configure(&connection)?;
                connection.set_prepared_statement_cache_capacity(32);
                Some(Mutex::new(connection))
            }
            None => None,
        };
        Ok(SqliteStore {
            writer: Arc::clone(&self.writer),
            reader,
            path: self.path.clone(),
        })
    }

    /// The connection writes go through.
    fn writer(&self) -> MutexGuard<'_, Connection> {
        lock(&self.writer)
    }

    /// The connection reads go through.
    fn reads(&self) -> MutexGuard<'_, Connection> {
        lock(self.reader.as_ref().unwrap_or(&self.writer))
    }

    /// The task rows a listing statement reads.
    fn read_tasks(
        &self,
        sql: &str,
        params: Vec<schema::SqlValue>,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let connection = self.reads();
        let mut statement = connection.prepare_cached(sql).map_err(sql_error)?;
        statement
            .query_map(params_from_iter(bind(params)), |row| {
                schema::task_from_row(&Columns(row)).map_err(row_error)
            })
            .map_err(sql_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql_error)
    }
}

fn lock(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // rusqlite rolls an open transaction back when it is dropped, so a panic inside a
    // transaction leaves no partial write behind a poisoned lock.
    connection
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A transaction that may write: it takes SQLite's write lock at `BEGIN`.
///
/// A deferred transaction (rusqlite's default) that reads first holds a read transaction when
/// its first write asks for the write lock, and SQLite never calls the busy handler for a read
/// transaction upgraded to a write: if the lock is taken at that instant, the write fails at
/// once with `SQLITE_BUSY`, whatever `busy_timeout` says. With one writer connection the lock
/// is still taken by others now and then: a reader connection that reads the WAL index header
/// while a commit is rewriting it takes the write lock for a moment to read the header again
/// (`walIndexReadHdr` in SQLite's `wal.c`). `BEGIN IMMEDIATE` asks for the lock before any
/// read, with no transaction open, so the busy handler waits that moment out.
fn write_transaction(connection: &mut Connection) -> rusqlite::Result<Transaction<'_>> {
    connection.transaction_with_behavior(TransactionBehavior::Immediate)
}

/// Creates the tables, or brings the tables an earlier version created to the current schema
/// (see [`schema::upgrade`]), in one transaction.
fn upgrade_schema(connection: &mut Connection) -> rusqlite::Result<()> {
    let tx = write_transaction(connection)?;
    let table: Option<String> = tx
        .query_row(schema::SELECT_TASK_TABLE, [], |row| row.get(0))
        .optional()?;
    for statement in schema::upgrade(table.as_deref()) {
        tx.execute_batch(statement)?;
    }
    tx.commit()
}

/// The connection settings the store (and the benchmark's bare insert) run with.
pub fn configure(connection: &Connection) -> Result<(), StoreError> {
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .map_err(sql_error)?;
    connection
        .pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql_error)?;
    connection
        .pragma_update(None, "busy_timeout", 5_000)
        .map_err(sql_error)?;
    Ok(())
}

fn sql_error(error: rusqlite::Error) -> StoreError {
    StoreError(format!("SQLite: {error}"))
}

fn row_error(error: RowError) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        error.column,
        rusqlite::types::Type::Null,
        Box::new(error),
    )
}

/// The statement parameters of [`schema`]'s functions, as rusqlite binds them.
pub fn bind(values: Vec<SqlValue>) -> impl Iterator<Item = SqliteValue> {
    values.into_iter().map(|value| match value {
        SqlValue::Null => SqliteValue::Null,
        SqlValue::Integer(i) => SqliteValue::Integer(i),
        SqlValue::Text(t) => SqliteValue::Text(t),
    })
}

struct Columns<'r, 's>(&'r Row<'s>);

impl SqlRow for Columns<'_, '_> {
    fn integer(&self, index: usize) -> Result<Option<i64>, RowError> {
        match self.0.get_ref(index) {
            Ok(ValueRef::Null) => Ok(None),
            Ok(ValueRef::Integer(i)) => Ok(Some(i)),
            Ok(other) => Err(RowError {
                column: index,
                reason: format!("expected an integer, found {:?}", other.data_type()),
            }),
            Err(e) => Err(RowError {
                column: index,
                reason: e.to_string(),
            }),
        }
    }

    fn text(&self, index: usize) -> Result<Option<String>, RowError> {
        match self.0.get_ref(index) {
            Ok(ValueRef::Null) => Ok(None),
            Ok(ValueRef::Text(t)) => Ok(Some(String::from_utf8_lossy(t).into_owned())),
            Ok(other) => Err(RowError {
                column: index,
                reason: format!("expected text, found {:?}", other.data_type()),
            }),
            Err(e) => Err(RowError {
                column: index,
                reason: e.to_string(),
            }),
        }
    }
}

fn load_task(connection: &Connection, task_id: &str) -> rusqlite::Result<Option<TaskRecord>> {
    connection
        .prepare_cached(schema::SELECT_TASK)?
        .query_row([task_id], |row| {
            schema::task_from_row(&Columns(row)).map_err(row_error)
        })
        .optional()
}

impl Store for SqliteStore {
    fn create(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError> {
        let connection = self.writer();
        connection
            .prepare_cached(schema::INSERT_TASK)
            .and_then(|mut s| s.execute(params_from_iter(bind(schema::task_params(task)))))
            .map_err(sql_error)?;
        load_task(&connection, &task.task_id)
            .map_err(sql_error)?
            .ok_or_else(|| StoreError("the task row vanished right after its insert".into()))
    }

    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, StoreError> {
        let mut connection = self.reads();
        // One read transaction (deferred: it never writes): the task and its journal as of one
        // instant.
        let tx = connection.transaction().map_err(sql_error)?;
        let Some(task) = load_task(&tx, task_id).map_err(sql_error)? else {
            return Ok(None);
        };
        let steps_sql = match scope {
            LoadScope::Full => schema::SELECT_STEPS,
            LoadScope::Control => schema::SELECT_PENDING_STEPS,
        };
        let mut steps = std::collections::BTreeMap::new();
        let mut statement = tx.prepare_cached(steps_sql).map_err(sql_error)?;
        let rows = statement
            .query_map([task_id], |row| {
                schema::step_from_row(&Columns(row)).map_err(row_error)
            })
            .map_err(sql_error)?;
        for row in rows {
            let row = row.map_err(sql_error)?;
            steps.insert(row.key.clone(), row);
        }
        drop(statement);
        let mut inputs = std::collections::BTreeMap::new();
        let mut statement = tx
            .prepare_cached(schema::SELECT_INPUTS)
            .map_err(sql_error)?;
        let rows = statement
            .query_map([task_id], |row| {
                schema::input_from_row(&Columns(row)).map_err(row_error)
            })
            .map_err(sql_error)?;
        for row in rows {
            let row = row.map_err(sql_error)?;
            inputs.insert(row.key.clone(), row);
        }
        drop(statement);
        tx.commit().map_err(sql_error)?;
        Ok(Some(TaskState {
            task,
            steps,
            inputs,
        }))
    }

    fn load_input(&self, task_id: &str, key: &str) -> Result<Option<InputRow>, StoreError> {
        let connection = self.reads();
        connection
            .prepare_cached(schema::SELECT_INPUT)
            .and_then(|mut s| {
                s.query_row([task_id, key], |row| {
                    schema::input_from_row(&Columns(row)).map_err(row_error)
                })
                .optional()
            })
            .map_err(sql_error)
    }

    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, StoreError> {
        let mut connection = self.writer();
        let tx = write_transaction(&mut connection).map_err(sql_error)?;
        let guard_sql = if writes.iter().any(Write::changes_task) {
            schema::GUARD_AND_BUMP
        } else {
            schema::GUARD
        };
        let cancel_requested: Option<i64> = tx
            .prepare_cached(guard_sql)
            .and_then(|mut s| {
                s.query_row(
                    params_from_iter(bind(schema::guard_params(task_id, guard))),
                    |r| r.get(0),
                )
                .optional()
            })
            .map_err(sql_error)?;
        if cancel_requested.is_none() {
            // Dropping the transaction rolls back: nothing was written.
            return Ok(Applied::Stale);
        }
        for write in writes {
            let (sql, params) = schema::write_statement(task_id, write);
            tx.prepare_cached(sql)
                .and_then(|mut s| s.execute(params_from_iter(bind(params))))
                .map_err(sql_error)?;
        }
        let cancel_requested = Write::cancel_flag_after(writes, cancel_requested != Some(0));
        tx.commit().map_err(sql_error)?;
        Ok(Applied::Done { cancel_requested })
    }

    fn purge(&self, task_id: &str) -> Result<(), StoreError> {
        let mut connection = self.writer();
        let tx = write_transaction(&mut connection).map_err(sql_error)?;
        for sql in schema::PURGE {
            tx.prepare_cached(sql)
                .and_then(|mut s| s.execute([task_id]))
                .map_err(sql_error)?;
        }
        tx.commit().map_err(sql_error)
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        let connection = self.reads();
        let mut statement = connection
            .prepare_cached(schema::SELECT_TASK_IDS)
            .map_err(sql_error)?;
        statement
            .query_map([], |row| row.get(0))
            .map_err(sql_error)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(sql_error)
    }

    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let (sql, params) = schema::listed_statement(scope, after, limit);
        self.read_tasks(sql, params)
    }

    fn list_every_task(
        &self,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let (sql, params) = schema::every_task_statement(after, limit);
        self.read_tasks(sql, params)
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, params_from_iter};

    use super::{Columns, bind};
    use crate::core::schema::{self, SqlValue};
    use crate::core::{StepKind, StepRow, StepStatus, Timestamp};

    fn step(key: &str, status: StepStatus, result: Option<&str>) -> StepRow {
        StepRow {
            key: key.to_owned(),
            kind: StepKind::Do,
            status,
            result: result.map(str::to_owned),
            attempt: 2,
            next_attempt_at: None,
            wake_at: Some(Timestamp(1_795_957_429_895)),
            last_error: Some("a \"quoted\"\nline, then ü and \u{1F600}".to_owned()),
            seq: 7,
            created_at: Timestamp(1_795_957_429_000),
            completed_at: None,
        }
    }

    fn stored_steps(connection: &Connection) -> Vec<StepRow> {
        let mut statement = connection.prepare(schema::SELECT_STEPS).unwrap();
        statement
            .query_map(["task"], |row| {
                Ok(schema::step_from_row(&Columns(row)).expect("a step row"))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// A database an earlier version wrote (its `task` table without `list_scope` and
    /// `code_version`) opens, keeps its rows (unlisted, without a code version), and lists the
    /// tasks created since; opening again changes nothing more.
    #[test]
    fn a_database_of_an_earlier_version_gains_the_added_columns() {
        use crate::core::{ListPosition, LoadScope, control};
        use crate::runtime::Store;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        {
            let old = Connection::open(&path).unwrap();
            let old_schema = schema::CREATE_SCHEMA.replace(
                ",\n    list_scope TEXT,\n    code_version TEXT,\n    parent TEXT",
                "",
            );
            assert_ne!(old_schema, schema::CREATE_SCHEMA);
            old.execute_batch(&old_schema).unwrap();
            old.execute(
                "INSERT INTO task (task_id, tool_name, input, status, status_published, \
                 created_at, last_updated_at, poll_interval_ms, cancel_requested, run_attempt, \
                 generation, cut_next_sleep, version) \
                 VALUES ('old', 'tool', '{}', 'working', 0, 5, 5, 1000, 0, 0, 0, 0, 0)",
                [],
            )
            .unwrap();
        }
        let store = super::SqliteStore::open(&path).unwrap();
        let old = store.load("old", LoadScope::Full).unwrap().expect("kept");
        assert_eq!(
            (old.task.tool_name.as_str(), old.task.list_scope),
            ("tool", None)
        );
        assert_eq!(old.task.code_version, None);
        let new = control::NewTask {
            task_id: "new".into(),
            tool_name: "tool".into(),
            input: "{}".into(),
            ttl: None,
            poll_interval: std::time::Duration::from_secs(1),
            principal: None,
            list_scope: Some("principal:ada".into()),
            code_version: Some("2.0.0".into()),
            parent: None,
        };
        store
            .create(&control::new_task_record(new, Timestamp(9)))
            .unwrap();
        let created = store
            .load("new", LoadScope::Control)
            .unwrap()
            .expect("stored");
        assert_eq!(created.task.code_version.as_deref(), Some("2.0.0"));
        let listed = |store: &super::SqliteStore| -> Vec<String> {
            let after = ListPosition {
                created_at: Timestamp(0),
                task_id: String::new(),
            };
            store
                .list_tasks("principal:ada", Some(&after), 10)
                .unwrap()
                .into_iter()
                .map(|task| task.task_id)
                .collect()
        };
        assert_eq!(listed(&store), ["new"]);
        drop(store);
        let reopened = super::SqliteStore::open(&path).unwrap();
        assert_eq!(listed(&reopened), ["new"]);
        let connection = Connection::open(&path).unwrap();
        let index: String = connection
            .query_row(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'task_list'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(index, "task_list");
    }

    /// A write that reads first waits through `busy_timeout` while another connection holds
    /// the write lock, instead of failing at once with "database is locked": SQLite calls no
    /// busy handler for a deferred transaction that read and then writes, and the store's
    /// writes of step rows read their guard first.
    #[test]
    fn a_write_that_reads_first_waits_for_the_write_lock() {
        use std::sync::mpsc;
        use std::time::Duration;

        use crate::core::{Applied, Guard, LoadScope, Write, control};
        use crate::runtime::Store;

        // Far below `busy_timeout` (5 s): a write that waits for the lock gets it.
        const HELD: Duration = Duration::from_millis(500);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let store = super::SqliteStore::open(&path).unwrap();
        let new = control::NewTask {
            task_id: "task".into(),
            tool_name: "tool".into(),
            input: "{}".into(),
            ttl: None,
            poll_interval: Duration::from_secs(1),
            principal: None,
            list_scope: None,
            code_version: None,
            parent: None,
        };
        store
            .create(&control::new_task_record(new, Timestamp(9)))
            .unwrap();
        // Another connection takes the write lock and keeps it for a while.
        let hold = |path: std::path::PathBuf| {
            let (taken, locked) = mpsc::channel();
            let holder = std::thread::spawn(move || {
                let other = Connection::open(path).unwrap();
                other.execute_batch("BEGIN IMMEDIATE").unwrap();
                taken.send(()).unwrap();
                std::thread::sleep(HELD);
                other.execute_batch("COMMIT").unwrap();
            });
            locked.recv().unwrap();
            holder
        };

        // What SQLite does with a deferred transaction: the read is served, the write that
        // follows fails at once although the connection waits up to 5 s for a busy lock.
        let holder = hold(path.clone());
        let mut bare = Connection::open(&path).unwrap();
        super::configure(&bare).unwrap();
        let tx = bare.transaction().unwrap();
        let guard = rusqlite::params!["task", None::<i64>, None::<i64>];
        tx.query_row(schema::GUARD, guard, |_| Ok(())).unwrap();
        let error = tx
            .execute("DELETE FROM steps WHERE task_id = 'task'", [])
            .unwrap_err();
        assert_eq!(
            error.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy)
        );
        drop(tx);
        holder.join().unwrap();

        // The store's write of a step row (its guard is read first) waits for the lock.
        let holder = hold(path.clone());
        let writes = [Write::PutStep(step("fetch", StepStatus::Pending, None))];
        let applied = store.apply("task", Guard::default(), &writes).unwrap();
        assert!(matches!(applied, Applied::Done { .. }), "{applied:?}");
        holder.join().unwrap();
        let state = store.load("task", LoadScope::Full).unwrap().unwrap();
        assert!(state.steps.contains_key("fetch"));
    }

    /// A listing page reads from the listing index, starting at the position.
    #[test]
    fn a_listing_page_is_read_through_the_index() {
        let connection = Connection::open_in_memory().unwrap();
        for statement in schema::upgrade(None) {
            connection.execute_batch(statement).unwrap();
        }
        for sql in [schema::SELECT_LISTED, schema::SELECT_LISTED_AFTER] {
            let mut plan = connection
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap();
            let params = if sql == schema::SELECT_LISTED { 2 } else { 4 };
            let details: Vec<String> = plan
                .query_map(
                    params_from_iter(vec![rusqlite::types::Value::Null; params]),
                    |row| row.get(3),
                )
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let details = details.join("; ");
            assert!(details.contains("USING INDEX task_list"), "{details}");
            assert!(
                !details.contains("TEMP B-TREE"),
                "sorted by the index: {details}"
            );
            if sql == schema::SELECT_LISTED_AFTER {
                assert!(details.contains("created_at>?"), "{details}");
            }
        }
    }

    /// The SQL of a listing scope's index (a Cloudflare TaskIndex object's table) keeps the
    /// first position of an id, pages in order from any position, and forgets a JSON list of
    /// ids.
    #[test]
    fn a_scope_index_pages_in_order_and_forgets_ids() {
        use crate::core::ListPosition;

        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(schema::CREATE_INDEX_SCHEMA)
            .unwrap();
        let run = |sql: &str, params: Vec<SqlValue>| {
            connection
                .execute(sql, params_from_iter(bind(params)))
                .unwrap();
        };
        for (id, at) in [("c", 30), ("a", 10), ("b2", 20), ("b1", 20), ("a", 99)] {
            run(
                schema::INDEX_ADD,
                schema::index_add_params(id, Timestamp(at)),
            );
        }
        let page = |after: Option<(u64, &str)>, limit| -> Vec<(u64, String)> {
            let after = after.map(|(at, id)| ListPosition {
                created_at: Timestamp(at),
                task_id: id.to_owned(),
            });
            let (sql, params) = schema::index_page_statement(after.as_ref(), limit);
            let mut statement = connection.prepare(sql).unwrap();
            statement
                .query_map(params_from_iter(bind(params)), |row| {
                    let entry = schema::index_entry_from_row(&Columns(row)).unwrap();
                    Ok((entry.created_at.as_millis(), entry.task_id))
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let entry = |at: u64, id: &str| (at, id.to_owned());
        assert_eq!(
            page(None, 10),
            [
                entry(10, "a"),
                entry(20, "b1"),
                entry(20, "b2"),
                entry(30, "c")
            ],
            "an id added again keeps its first position"
        );
        assert_eq!(page(None, 2), [entry(10, "a"), entry(20, "b1")]);
        assert_eq!(page(Some((20, "b1")), 2), [entry(20, "b2"), entry(30, "c")]);
        assert_eq!(page(Some((30, "c")), 2), []);
        let remove =
            schema::index_remove_params(&["b1".to_owned(), "c".to_owned(), "x".to_owned()]);
        run(schema::INDEX_REMOVE, remove);
        assert_eq!(page(None, 10), [entry(10, "a"), entry(20, "b2")]);
        let any = |c: &Connection| c.prepare(schema::INDEX_ANY).unwrap().exists([]).unwrap();
        assert!(any(&connection));
        run(
            schema::INDEX_REMOVE,
            schema::index_remove_params(&["a".into(), "b2".into()]),
        );
        assert!(!any(&connection));
    }

    /// The Durable Object store writes a turn's step rows as one JSON array
    /// (`PUT_STEPS_JSON`); read back, they must be what one `PUT_STEP` per row stores.
    #[test]
    fn a_json_batch_of_step_rows_stores_what_one_statement_per_row_stores() {
        let rows = [
            step("fetch", StepStatus::Pending, None),
            step(
                "plain",
                StepStatus::Completed,
                Some(r#"{"text":"\"x\" \\ y"}"#),
            ),
            // The same key again: the later row replaces the earlier, as it would one by one.
            step("fetch", StepStatus::Completed, Some("null")),
            step("big", StepStatus::Completed, Some(&"9".repeat(40))),
        ];
        let open = || {
            let connection = Connection::open_in_memory().unwrap();
            connection.execute_batch(schema::CREATE_SCHEMA).unwrap();
            connection
        };
        let one_by_one = open();
        for row in &rows {
            let params = bind(schema::step_params("task", row));
            one_by_one
                .execute(schema::PUT_STEP, params_from_iter(params))
                .unwrap();
        }
        let batched = open();
        let mut json = Vec::new();
        for (index, row) in rows.iter().enumerate() {
            json.push(if index == 0 { b'[' } else { b',' });
            schema::write_json_row(&mut json, &schema::step_params("task", row));
        }
        json.push(b']');
        let json = String::from_utf8(json).unwrap();
        let params = bind(vec![SqlValue::Text(json)]);
        batched
            .execute(schema::PUT_STEPS_JSON, params_from_iter(params))
            .unwrap();

        let expected = stored_steps(&one_by_one);
        assert_eq!(expected.len(), 3);
        assert_eq!(stored_steps(&batched), expected);
    }
}
