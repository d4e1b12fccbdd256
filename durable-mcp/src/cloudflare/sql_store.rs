//! The [`Store`] on a Durable Object's SQLite storage (`ctx.storage.sql`).
//!
//! `SqlStorage::exec` is synchronous, so each store call runs without an await: nothing else
//! runs in the object meanwhile. Multi-statement changes run inside `transactionSync`, which
//! workers-rs does not wrap; it is called through `js_sys` so that a failing statement rolls
//! back every statement before it.
//!
//! The tables are created by the first `create`, not on open: reading a task that was never
//! created (a `tasks/get` of an unknown id reaches a fresh object) must leave no storage behind.
//!
//! A step row, the write a running body makes most, costs no read and no statement of its
//! own. Only this instance writes the object's storage, so the task row's guard columns are
//! kept in memory from the last read until a write changes the row, and the row is added to
//! the turn's [`StepBatch`].
//!
//! For the same reason a task's control state (the task row, its pending steps and its input
//! rows: what `tasks/get` reads) is kept from the last read until the next write of any kind,
//! so that the polls of an unchanged task run no SQL.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;

use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen::closure::Closure;
use worker::{Storage, js_sys};

use super::sql::{Sql, js_error};
use super::step_batch::StepBatch;
use crate::core::schema::{self, RowError, SqlRow};
use crate::core::{
    Applied, Guard, InputRow, ListPosition, LoadScope, StepRow, TaskRecord, TaskState, Write,
};
use crate::runtime::{Store, StoreError};

/// A [`Store`] on the SQLite storage of one Durable Object.
pub struct DurableObjectStore {
    storage: Storage,
    sql: Rc<Sql>,
    /// Whether the tables are known to exist.
    tables: Cell<bool>,
    /// A task's id and its row's guard columns as last read, until a write changes the row.
    guard_columns: RefCell<Option<(String, GuardColumns)>>,
    /// A task's control state as last read ([`LoadScope::Control`]), until the next write.
    control_state: RefCell<Option<TaskState>>,
    steps: StepBatch,
}

/// What a guard checks in a task row, and the cancel flag a write reports.
#[derive(Clone, Copy, Debug)]
struct GuardColumns {
    version: u64,
    generation: u64,
    cancel_requested: bool,
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
        let sql = Rc::new(Sql::new(&storage.sql()));
        DurableObjectStore {
            storage,
            steps: StepBatch::new(Rc::clone(&sql)),
            sql,
            tables: Cell::new(false),
            guard_columns: RefCell::default(),
            control_state: RefCell::default(),
        }
    }

    /// Forgets that the tables exist, after `deleteAll` removed them with everything else.
    pub fn forget_tables(&self) {
        self.tables.set(false);
        self.guard_columns.take();
        self.control_state.take();
        self.steps.discard();
    }

    /// The control state of `task_id` kept since its last read, if no write came after it.
    fn kept_control_state(&self, task_id: &str, scope: LoadScope) -> Option<TaskState> {
        let kept = self.control_state.borrow();
        let state = kept.as_ref()?;
        (scope == LoadScope::Control && state.task.task_id == task_id).then(|| state.clone())
    }

    /// The guard columns of `task_id`'s row, from memory when this instance read them since
    /// the row last changed; `None` if there is no such task.
    fn guard_columns(&self, task_id: &str) -> Result<Option<GuardColumns>, StoreError> {
        if let Some((id, columns)) = &*self.guard_columns.borrow()
            && id == task_id
        {
            return Ok(Some(*columns));
        }
        let rows = self
            .sql
            .rows(schema::SELECT_GUARD_COLUMNS, vec![task_id.into()])?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let number = |index| -> Result<u64, StoreError> {
            let value = row.integer(index).map_err(row_error)?.unwrap_or(0);
            u64::try_from(value)
                .map_err(|_| StoreError(format!("a negative guard column: {value}")))
        };
        let columns = GuardColumns {
            version: number(0)?,
            generation: number(1)?,
            cancel_requested: number(2)? != 0,
        };
        *self.guard_columns.borrow_mut() = Some((task_id.to_owned(), columns));
        Ok(Some(columns))
    }

    /// Adds a step row to the turn's batch if the guard admits it.
    fn put_step(&self, task_id: &str, guard: Guard, step: &StepRow) -> Result<Applied, StoreError> {
        let Some(columns) = self.guard_columns(task_id)? else {
            return Ok(Applied::Stale);
        };
        if !guard.admits_columns(columns.version, columns.generation) {
            return Ok(Applied::Stale);
        }
        self.steps.push(task_id, step)?;
        Ok(Applied::Done {
            cancel_requested: columns.cancel_requested,
        })
    }

    /// Whether the tables exist (a read of the catalogue, which writes nothing unless the
    /// tables are an earlier version's: those are brought to the current schema).
    fn has_tables(&self) -> Result<bool, StoreError> {
        self.tables_ready(false)
    }

    /// Creates the tables unless they exist; brings existing ones to the current schema.
    fn create_tables(&self) -> Result<(), StoreError> {
        self.tables_ready(true).map(drop)
    }

    fn tables_ready(&self, create: bool) -> Result<bool, StoreError> {
        if self.tables.get() {
            return Ok(true);
        }
        let found = self.sql.rows(schema::SELECT_TASK_TABLE, Vec::new())?;
        let table = match found.first() {
            Some(row) => Some(row.text(0).map_err(row_error)?.unwrap_or_default()),
            None if create => None,
            None => return Ok(false),
        };
        let statements = schema::upgrade(table.as_deref());
        if !statements.is_empty() {
            self.transaction(move |sql| {
                for statement in statements {
                    sql.execute(statement, Vec::new())?;
                }
                Ok(())
            })?;
        }
        self.tables.set(true);
        Ok(true)
    }

    /// Runs `body` in one SQLite transaction: if it fails, none of its statements stay.
    fn transaction<T: 'static>(
        &self,
        body: impl FnOnce(&Sql) -> Result<T, StoreError> + 'static,
    ) -> Result<T, StoreError> {
        let outcome = Rc::new(RefCell::new(None));
        let slot = Rc::clone(&outcome);
        // A Worker built with `--panic-unwind` asks for unwind safety here. A panic inside the
        // callback unwinds out of transactionSync, which rolls back; nothing captured is used
        // afterwards but `outcome`, which then stays `None`.
        let captured = AssertUnwindSafe((body, slot, Rc::clone(&self.sql)));
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

fn row_error(error: RowError) -> StoreError {
    StoreError(error.to_string())
}

fn load_task(sql: &Sql, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
    sql.rows(schema::SELECT_TASK, vec![task_id.into()])?
        .first()
        .map(|row| schema::task_from_row(row).map_err(row_error))
        .transpose()
}

/// Checks `guard` and applies `writes`; the caller makes the whole atomic.
fn guarded_writes(
    sql: &Sql,
    task_id: &str,
    guard: Guard,
    writes: &[Write],
) -> Result<Applied, StoreError> {
    let guard_sql = if writes.iter().any(Write::changes_task) {
        schema::GUARD_AND_BUMP
    } else {
        schema::GUARD
    };
    let guarded = sql.rows(guard_sql, schema::guard_params(task_id, guard))?;
    let Some(row) = guarded.first() else {
        return Ok(Applied::Stale);
    };
    let flag = row.integer(0).map_err(row_error)?;
    for write in writes {
        let (statement, params) = schema::write_statement(task_id, write);
        sql.execute(statement, params)?;
    }
    let cancel_requested = Write::cancel_flag_after(writes, flag != Some(0));
    Ok(Applied::Done { cancel_requested })
}

impl Store for DurableObjectStore {
    fn create(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError> {
        self.steps.write()?;
        self.guard_columns.take();
        self.control_state.take();
        self.create_tables()?;
        self.sql
            .execute(schema::INSERT_TASK, schema::task_params(task))?;
        load_task(&self.sql, &task.task_id)?
            .ok_or_else(|| StoreError("the task row vanished right after its insert".into()))
    }

    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, StoreError> {
        // Kept only while nothing was written since, so no step is waiting in the batch either.
        if let Some(state) = self.kept_control_state(task_id, scope) {
            return Ok(Some(state));
        }
        self.steps.write()?;
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
        for row in self.sql.rows(steps_sql, vec![task_id.into()])? {
            let step = schema::step_from_row(&row).map_err(row_error)?;
            steps.insert(step.key.clone(), step);
        }
        let mut inputs = BTreeMap::new();
        for row in self.sql.rows(schema::SELECT_INPUTS, vec![task_id.into()])? {
            let input = schema::input_from_row(&row).map_err(row_error)?;
            inputs.insert(input.key.clone(), input);
        }
        let state = TaskState {
            task,
            steps,
            inputs,
        };
        if scope == LoadScope::Control {
            *self.control_state.borrow_mut() = Some(state.clone());
        }
        Ok(Some(state))
    }

    fn load_input(&self, task_id: &str, key: &str) -> Result<Option<InputRow>, StoreError> {
        self.steps.write()?;
        if !self.has_tables()? {
            return Ok(None);
        }
        self.sql
            .rows(schema::SELECT_INPUT, vec![task_id.into(), key.into()])?
            .first()
            .map(|row| schema::input_from_row(row).map_err(row_error))
            .transpose()
    }

    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, StoreError> {
        self.control_state.take();
        if !self.has_tables()? {
            return Ok(Applied::Stale);
        }
        if let [Write::PutStep(step)] = writes {
            return self.put_step(task_id, guard, step);
        }
        self.steps.write()?;
        if writes.iter().any(Write::changes_task) {
            self.guard_columns.take();
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

    fn flush(&self) -> Result<(), StoreError> {
        self.steps.before_closure()
    }

    fn purge(&self, task_id: &str) -> Result<(), StoreError> {
        self.steps.write()?;
        self.guard_columns.take();
        self.control_state.take();
        if !self.has_tables()? {
            return Ok(());
        }
        let task_id = task_id.to_owned();
        self.transaction(move |sql| {
            for statement in schema::PURGE {
                sql.execute(statement, vec![task_id.as_str().into()])?;
            }
            Ok(())
        })
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        self.steps.write()?;
        if !self.has_tables()? {
            return Ok(Vec::new());
        }
        self.sql
            .rows(schema::SELECT_TASK_IDS, Vec::new())?
            .iter()
            .map(|row| {
                row.text(0)
                    .map_err(row_error)?
                    .ok_or_else(|| StoreError("a task row without an id".to_owned()))
            })
            .collect()
    }

    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.steps.write()?;
        if !self.has_tables()? {
            return Ok(Vec::new());
        }
        let (statement, params) = schema::listed_statement(scope, after, limit);
        self.sql
            .rows(statement, params)?
            .iter()
            .map(|row| schema::task_from_row(row).map_err(row_error))
            .collect()
    }
}
