//! The TaskIndex: the logic of the Durable Object that lists the task ids of one listing scope
//! (one object per scope, named by the scope), so that `tasks/list` needs no object that every
//! task of every caller writes to.
//!
//! Each entry is a task id and the time the index recorded it, which orders the listing. The
//! Worker records an id before it creates the task, and forgets the ids whose tasks it finds
//! gone while listing; a TaskRunner forgets its own id as it purges its task. Once the last
//! entry is forgotten the object deletes its storage.
//!
//! A Worker whose durable-mcp lists no tasks (built without the `mcp-2025` and `inspector`
//! features) keeps the class, so that its wrangler.toml and migrations stay as they are, and
//! the object refuses every call: nothing sends it one.

#[cfg(task_listing)]
use std::cell::Cell;
#[cfg(task_listing)]
use std::panic::AssertUnwindSafe;
#[cfg(task_listing)]
use std::rc::Rc;

use worker::wasm_bindgen::JsValue;
use worker::{Request, Response, State};

#[cfg(task_listing)]
use super::object_rpc::answer_now_or_later;
#[cfg(task_listing)]
use super::ports::JsClock;
#[cfg(task_listing)]
use super::protocol::{IndexCall, IndexReply, answer_text};
use super::protocol::{js_error, refuse_fetch};
#[cfg(task_listing)]
use super::sql::Sql;
#[cfg(task_listing)]
use crate::core::ListPosition;
#[cfg(task_listing)]
use crate::core::schema;
#[cfg(task_listing)]
use crate::runtime::{Clock, StoreError};

/// The body of a user's TaskIndex Durable Object. [`task_runner!`](super::task_runner)
/// declares one for you (see also [`task_index!`](super::task_index)): a `#[durable_object]`
/// struct wrapping this, whose Durable Object RPC method `durableMcpCall` calls
/// [`call`](Self::call).
pub struct TaskIndex {
    #[cfg(task_listing)]
    // A Worker built with `--panic-unwind` requires its objects to be unwind safe; the object
    // keeps nothing in memory but whether its table exists. Shared with the calls in flight.
    inner: AssertUnwindSafe<Rc<Index>>,
}

#[cfg(task_listing)]
struct Index {
    state: State,
    sql: Sql,
    /// Whether the table is known to exist.
    table: Cell<bool>,
}

impl std::fmt::Debug for TaskIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskIndex").finish_non_exhaustive()
    }
}

impl TaskIndex {
    /// The index kept in the storage of the object `state`. Writes nothing until a task is
    /// recorded. The class must be declared with `new_sqlite_classes` in a wrangler migration.
    #[cfg(task_listing)]
    pub fn new(state: State) -> Self {
        let sql = Sql::new(&state.storage().sql());
        TaskIndex {
            inner: AssertUnwindSafe(Rc::new(Index {
                state,
                sql,
                table: Cell::new(false),
            })),
        }
    }

    /// Answers one internal call from the Worker or a TaskRunner, given as JSON text, with the
    /// reply's JSON text (itself, or a promise of it when the answer has to wait). Refuses
    /// (`Err`, a JavaScript error) a text that is no call, and fails the same way when the
    /// storage fails.
    #[cfg(task_listing)]
    pub fn call(&self, call: String) -> Result<JsValue, JsValue> {
        let index = Rc::clone(&self.inner);
        answer_now_or_later(async move {
            answer_text(&call, |call| async {
                index.answer(call).await.map_err(|error| {
                    worker::console_error!("durable-mcp: task index: {error}");
                    js_error(&format!("task index: {error}"))
                })
            })
            .await
        })
    }

    /// The index kept in the storage of the object `state`. Writes nothing until a task is
    /// recorded. The class must be declared with `new_sqlite_classes` in a wrangler migration.
    #[cfg(not(task_listing))]
    pub fn new(state: State) -> Self {
        let _ = state;
        TaskIndex {}
    }

    /// Answers one internal call from the Worker or a TaskRunner, given as JSON text, with the
    /// reply's JSON text (itself, or a promise of it when the answer has to wait). Refuses
    /// (`Err`, a JavaScript error) a text that is no call, and fails the same way when the
    /// storage fails.
    #[cfg(not(task_listing))]
    pub fn call(&self, call: String) -> Result<JsValue, JsValue> {
        let _ = call;
        Err(js_error(
            "this Worker lists no tasks (durable-mcp built without its mcp-2025 and inspector \
             features), so its TaskIndex answers nothing",
        ))
    }

    /// A `fetch` to the object: refused with 404, since it is reached only through
    /// [`call`](Self::call).
    pub fn fetch(&self, request: Request) -> worker::Result<Response> {
        refuse_fetch(&request, "TaskIndex")
    }
}

#[cfg(task_listing)]
impl Index {
    async fn answer(&self, call: IndexCall) -> Result<IndexReply, StoreError> {
        match call {
            IndexCall::Add { task_id } => {
                self.create_table()?;
                let params = schema::index_add_params(&task_id, JsClock.now());
                self.sql.execute(schema::INDEX_ADD, params)?;
                Ok(IndexReply::Done)
            }
            IndexCall::Page { after, limit } => self.page(after.as_ref(), limit),
            IndexCall::Remove { task_ids } => {
                self.remove(&task_ids).await?;
                Ok(IndexReply::Done)
            }
        }
    }

    fn page(&self, after: Option<&ListPosition>, limit: usize) -> Result<IndexReply, StoreError> {
        if !self.has_table()? {
            return Ok(IndexReply::Entries(Vec::new()));
        }
        let (statement, params) = schema::index_page_statement(after, limit);
        let entries = self
            .sql
            .rows(statement, params)?
            .iter()
            .map(|row| schema::index_entry_from_row(row).map_err(|e| StoreError(e.to_string())))
            .collect::<Result<_, _>>()?;
        Ok(IndexReply::Entries(entries))
    }

    /// Forgets `task_ids`; once none is left, deletes the object's storage, so an index whose
    /// tasks are all gone costs nothing.
    async fn remove(&self, task_ids: &[String]) -> Result<(), StoreError> {
        if task_ids.is_empty() || !self.has_table()? {
            return Ok(());
        }
        let params = schema::index_remove_params(task_ids);
        self.sql.execute(schema::INDEX_REMOVE, params)?;
        if self.sql.rows(schema::INDEX_ANY, Vec::new())?.is_empty() {
            // The input gate holds other calls (an `Add`) until the storage call returns.
            let deleted = self.state.storage().delete_all().await;
            self.table.set(false);
            deleted.map_err(|error| StoreError(format!("deleteAll: {error}")))?;
        }
        Ok(())
    }

    /// Whether the table exists (a read of the catalogue, which writes nothing).
    fn has_table(&self) -> Result<bool, StoreError> {
        if !self.table.get() {
            let found = self.sql.rows(schema::SELECT_INDEX_TABLE, Vec::new())?;
            self.table.set(!found.is_empty());
        }
        Ok(self.table.get())
    }

    fn create_table(&self) -> Result<(), StoreError> {
        if !self.table.get() {
            self.sql.execute(schema::CREATE_INDEX_SCHEMA, Vec::new())?;
            self.table.set(true);
        }
        Ok(())
    }
}
