//! The [`Store`] on a Durable Object's SQLite storage (`ctx.storage.sql`).
//!
//! `SqlStorage::exec` is synchronous, so each store call runs without an await: nothing else
//! runs in the object meanwhile. Multi-statement changes run inside `transactionSync`, which
//! workers-rs does not wrap; it is called through `js_sys` so that a failing statement rolls
//! back every statement before it.
//!
//! The tables are created by the first `create`, not on open: reading a task that was never
//! created (a `tasks/get` of an unknown id reaches a fresh object) must leave no storage behind.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;

use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen::closure::Closure;
use worker::{SqlStorage, SqlStorageValue, Storage, js_sys};

use crate::core::schema::{self, RowError, SqlRow, SqlValue};
use crate::core::{Applied, Guard, InputRow, LoadScope, TaskRecord, TaskState, Write};
use crate::runtime::{Store, StoreError};

/// A [`Store`] on the SQLite storage of one Durable Object.
pub struct DurableObjectStore {
    storage: Storage,
    sql: SqlStorage,
    /// Whether the tables are known to exist.
    tables: Cell<bool>,
}

impl std::fmt::Debug for DurableObjectStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableObjectStore").finish_non_exhaustive()
    }
}

impl DurableObjectStore {
    /// The store on `storage`. Nothing is written until a task is created. The object's class
    /// must be declared with `new_sqlite_classes` in a wrangler migration.
    pub fn open(storage: Storage) -> Self {
        let sql = storage.sql();
        DurableObjectStore {
            storage,
            sql,
            tables: Cell::new(false),
        }
    }

    /// Forgets that the tables exist, after `deleteAll` removed them with everything else.
    pub fn forget_tables(&self) {
        self.tables.set(false);
    }

    /// Whether the tables exist (a read of the catalogue, which writes nothing).
    fn has_tables(&self) -> Result<bool, StoreError> {
        if !self.tables.get() {
            let found = rows(&self.sql, schema::SELECT_TASK_TABLE, Vec::new())?;
            self.tables.set(!found.is_empty());
        }
        Ok(self.tables.get())
    }

    fn create_tables(&self) -> Result<(), StoreError> {
        if !self.tables.get() {
            self.sql
                .exec(schema::CREATE_SCHEMA, None)
                .map_err(worker_error)?;
            self.tables.set(true);
        }
        Ok(())
    }

    /// Runs `body` in one SQLite transaction: if it fails, none of its statements stay.
    fn transaction<T: 'static>(
        &self,
        body: impl FnOnce(&SqlStorage) -> Result<T, StoreError> + 'static,
    ) -> Result<T, StoreError> {
        let outcome = std::rc::Rc::new(RefCell::new(None));
        let slot = std::rc::Rc::clone(&outcome);
        // A Worker built with `--panic-unwind` asks for unwind safety here. A panic inside the
        // callback unwinds out of transactionSync, which rolls back; nothing captured is used
        // afterwards but `outcome`, which then stays `None`.
        let captured = AssertUnwindSafe((body, slot, self.sql.clone()));
        let callback = Closure::once_into_js(move || -> Result<JsValue, JsValue> {
            let whole = captured;
            let (body, slot, sql) = whole.0;
            match body(&sql) {
                Ok(value) => {
                    *slot.borrow_mut() = Some(Ok(value));
                    Ok(JsValue::UNDEFINED)
                }
                Err(error) => {
                    let message = JsValue::from_str(&error.0);
                    *slot.borrow_mut() = Some(Err(error));
                    // Throwing from the callback rolls the transaction back.
                    Err(message)
                }
            }
        });
        let raw: &JsValue = self.storage.as_raw().as_ref();
        let transaction_sync: js_sys::Function =
            js_sys::Reflect::get(raw, &"transactionSync".into())
                .map_err(js_error)?
                .into();
        let called = transaction_sync.call1(raw, &callback);
        match outcome.borrow_mut().take() {
            Some(result) => result,
            None => Err(called.err().map_or_else(
                || StoreError("transactionSync did not run its callback".to_owned()),
                js_error,
            )),
        }
    }
}

fn worker_error(error: worker::Error) -> StoreError {
    StoreError(format!("Durable Object SQLite: {error}"))
}

fn js_error(error: JsValue) -> StoreError {
    StoreError(format!(
        "Durable Object SQLite: {}",
        error.as_string().unwrap_or_else(|| format!("{error:?}"))
    ))
}

fn bind(values: Vec<SqlValue>) -> Vec<SqlStorageValue> {
    values
        .into_iter()
        .map(|value| match value {
            SqlValue::Null => SqlStorageValue::Null,
            SqlValue::Integer(i) => SqlStorageValue::Integer(i),
            SqlValue::Text(t) => SqlStorageValue::String(t),
        })
        .collect()
}

/// Every row `query` returns, as column values.
fn rows(
    sql: &SqlStorage,
    query: &str,
    params: Vec<SqlValue>,
) -> Result<Vec<Vec<SqlStorageValue>>, StoreError> {
    let cursor = sql.exec(query, bind(params)).map_err(worker_error)?;
    cursor.raw().map(|row| row.map_err(worker_error)).collect()
}

fn execute(sql: &SqlStorage, query: &str, params: Vec<SqlValue>) -> Result<(), StoreError> {
    // A statement runs when its cursor is read to the end.
    rows(sql, query, params).map(drop)
}

struct Columns<'r>(&'r [SqlStorageValue]);

impl SqlRow for Columns<'_> {
    fn integer(&self, index: usize) -> Result<Option<i64>, RowError> {
        match self.0.get(index) {
            Some(SqlStorageValue::Null) => Ok(None),
            Some(SqlStorageValue::Integer(i)) => Ok(Some(*i)),
            // JavaScript numbers: an integer column comes back as a float without a fraction.
            Some(SqlStorageValue::Float(f)) if f.fract() == 0.0 && f.abs() < 9.007e15 =>
            {
                #[allow(clippy::cast_possible_truncation)]
                Ok(Some(*f as i64))
            }
            other => Err(RowError {
                column: index,
                reason: format!("expected an integer, found {other:?}"),
            }),
        }
    }

    fn text(&self, index: usize) -> Result<Option<String>, RowError> {
        match self.0.get(index) {
            Some(SqlStorageValue::Null) => Ok(None),
            Some(SqlStorageValue::String(text)) => Ok(Some(text.clone())),
            other => Err(RowError {
                column: index,
                reason: format!("expected text, found {other:?}"),
            }),
        }
    }
}

fn row_error(error: RowError) -> StoreError {
    StoreError(error.to_string())
}

fn load_task(sql: &SqlStorage, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
    rows(sql, schema::SELECT_TASK, vec![task_id.into()])?
        .first()
        .map(|row| schema::task_from_row(&Columns(row)).map_err(row_error))
        .transpose()
}

/// Checks `guard` and applies `writes`; the caller makes the whole atomic.
fn guarded_writes(
    sql: &SqlStorage,
    task_id: &str,
    guard: Guard,
    writes: &[Write],
) -> Result<Applied, StoreError> {
    let guard_sql = if writes.iter().any(Write::changes_task) {
        schema::GUARD_AND_BUMP
    } else {
        schema::GUARD
    };
    let guarded = rows(sql, guard_sql, schema::guard_params(task_id, guard))?;
    let Some(row) = guarded.first() else {
        return Ok(Applied::Stale);
    };
    let flag = Columns(row).integer(0).map_err(row_error)?;
    for write in writes {
        let (statement, params) = schema::write_statement(task_id, write);
        execute(sql, statement, params)?;
    }
    let cancel_requested = Write::cancel_flag_after(writes, flag != Some(0));
    Ok(Applied::Done { cancel_requested })
}

impl Store for DurableObjectStore {
    fn create(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError> {
        self.create_tables()?;
        execute(&self.sql, schema::INSERT_TASK, schema::task_params(task))?;
        load_task(&self.sql, &task.task_id)?
            .ok_or_else(|| StoreError("the task row vanished right after its insert".into()))
    }

    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, StoreError> {
        if !self.has_tables()? {
            return Ok(None);
        }
        // No await between the reads: they see one instant of the object's storage.
        let Some(task) = load_task(&self.sql, task_id)? else {
            return Ok(None);
        };
        let steps_sql = match scope {
            LoadScope::Full => schema::SELECT_STEPS,
            LoadScope::Control => schema::SELECT_PENDING_STEPS,
        };
        let mut steps = BTreeMap::new();
        for row in rows(&self.sql, steps_sql, vec![task_id.into()])? {
            let step = schema::step_from_row(&Columns(&row)).map_err(row_error)?;
            steps.insert(step.key.clone(), step);
        }
        let mut inputs = BTreeMap::new();
        for row in rows(&self.sql, schema::SELECT_INPUTS, vec![task_id.into()])? {
            let input = schema::input_from_row(&Columns(&row)).map_err(row_error)?;
            inputs.insert(input.key.clone(), input);
        }
        Ok(Some(TaskState {
            task,
            steps,
            inputs,
        }))
    }

    fn load_input(&self, task_id: &str, key: &str) -> Result<Option<InputRow>, StoreError> {
        if !self.has_tables()? {
            return Ok(None);
        }
        rows(
            &self.sql,
            schema::SELECT_INPUT,
            vec![task_id.into(), key.into()],
        )?
        .first()
        .map(|row| schema::input_from_row(&Columns(row)).map_err(row_error))
        .transpose()
    }

    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, StoreError> {
        if !self.has_tables()? {
            return Ok(Applied::Stale);
        }
        if let [write] = writes
            && !write.changes_task()
        {
            // A step or input row under a read-only guard: one statement writes, so it is
            // atomic without a transaction (the common case: every step of a body).
            return guarded_writes(&self.sql, task_id, guard, writes);
        }
        let task_id = task_id.to_owned();
        let writes = writes.to_vec();
        self.transaction(move |sql| guarded_writes(sql, &task_id, guard, &writes))
    }

    fn purge(&self, task_id: &str) -> Result<(), StoreError> {
        if !self.has_tables()? {
            return Ok(());
        }
        let task_id = task_id.to_owned();
        self.transaction(move |sql| {
            for statement in schema::PURGE {
                execute(sql, statement, vec![task_id.as_str().into()])?;
            }
            Ok(())
        })
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        if !self.has_tables()? {
            return Ok(Vec::new());
        }
        rows(&self.sql, schema::SELECT_TASK_IDS, Vec::new())?
            .iter()
            .map(|row| {
                Columns(row)
                    .text(0)
                    .map_err(row_error)?
                    .ok_or_else(|| StoreError("a task row without an id".to_owned()))
            })
            .collect()
    }
}
