//! The SQL text of every store that speaks SQLite, and the mapping between rows and records.
//!
//! The native store (rusqlite) and the Durable Object store execute exactly these statements,
//! bind parameters from [`SqlValue`]s and read rows through [`SqlRow`], so the two can never
//! drift apart in meaning.

use std::time::Duration;

use super::journal::{InputRow, StepKind, StepRow, StepStatus, Write};
use super::listing::ListPosition;
use super::task::{TaskFailure, TaskRecord, TaskStatus};
use super::time::{Timestamp, duration_millis};

/// The `CREATE TABLE` text of the `task` table, one row if the table exists: whether a store
/// has tables, and which columns they lack (see [`upgrade`]).
pub const SELECT_TASK_TABLE: &str =
    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'task'";

/// The tables, as the current version creates them. Idempotent, but it adds no column to a
/// table an earlier version created: stores run [`upgrade`]'s statements instead.
pub const CREATE_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS task (
    task_id TEXT PRIMARY KEY NOT NULL,
    tool_name TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    status_meta TEXT,
    status_published INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    last_updated_at INTEGER NOT NULL,
    finished_at INTEGER,
    ttl_ms INTEGER,
    poll_interval_ms INTEGER NOT NULL,
    result TEXT,
    error_code INTEGER,
    error_message TEXT,
    cancel_requested INTEGER NOT NULL,
    run_attempt INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    next_run_at INTEGER,
    cut_next_sleep INTEGER NOT NULL,
    principal TEXT,
    version INTEGER NOT NULL,
    list_scope TEXT
);
CREATE TABLE IF NOT EXISTS steps (
    task_id TEXT NOT NULL,
    step_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    attempt INTEGER NOT NULL,
    next_attempt_at INTEGER,
    wake_at INTEGER,
    last_error TEXT,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    completed_at INTEGER,
    PRIMARY KEY (task_id, step_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS steps_pending ON steps (task_id) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS input_requests (
    task_id TEXT NOT NULL,
    key TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT,
    answered INTEGER NOT NULL,
    answered_at INTEGER,
    timeout_at INTEGER,
    timed_out INTEGER NOT NULL,
    blocking INTEGER NOT NULL,
    consumed INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, key)
) WITHOUT ROWID;
";

/// The indexes over columns added after the first version; run once the columns exist.
/// `task_list` serves a listing: one scope's tasks in `(created_at, task_id)` order, from
/// any position. Unlisted tasks (no scope) take no room in it.
pub const CREATE_INDEXES: &str = "CREATE INDEX IF NOT EXISTS task_list \
    ON task (list_scope, created_at, task_id) WHERE list_scope IS NOT NULL";

/// A column of `task` added after the first version, and the statement that adds it to a
/// table created before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddedColumn {
    /// The column's name.
    pub name: &'static str,
    /// The `ALTER TABLE` that adds it.
    pub add: &'static str,
}

/// Every column added to `task` since the first version, oldest first.
pub const ADDED_COLUMNS: [AddedColumn; 1] = [AddedColumn {
    name: "list_scope",
    add: "ALTER TABLE task ADD COLUMN list_scope TEXT",
}];

/// The statements that bring a store's tables to the current schema, given the `task`
/// table's `CREATE TABLE` text as [`SELECT_TASK_TABLE`] found it (`None`: no tables yet).
/// Empty when the tables are current, so a store that checks on every start writes nothing.
pub fn upgrade(task_table: Option<&str>) -> Vec<&'static str> {
    let Some(table) = task_table else {
        return vec![CREATE_SCHEMA, CREATE_INDEXES];
    };
    let mut statements: Vec<&'static str> = ADDED_COLUMNS
        .iter()
        .filter(|column| !declares_column(table, column.name))
        .map(|column| column.add)
        .collect();
    if !statements.is_empty() {
        statements.push(CREATE_INDEXES);
    }
    statements
}

/// Whether the `CREATE TABLE` text `table` declares the column `name` (SQLite rewrites that
/// text on `ALTER TABLE ... ADD COLUMN`).
fn declares_column(table: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    table.match_indices(name).any(|(at, _)| {
        let before = table[..at].chars().next_back();
        let after = table[at + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// The columns of `task`, in the order of [`task_params`] and [`task_from_row`].
#[cfg(test)]
const TASK_COLUMNS: &str = "task_id, tool_name, input, status, status_message, status_meta, \
    status_published, created_at, last_updated_at, finished_at, ttl_ms, poll_interval_ms, result, \
    error_code, error_message, cancel_requested, run_attempt, generation, next_run_at, \
    cut_next_sleep, principal, version, list_scope";

macro_rules! select_tasks {
    ($filter:literal) => {
        concat!(
            "SELECT task_id, tool_name, input, status, status_message, status_meta, \
             status_published, created_at, last_updated_at, finished_at, ttl_ms, \
             poll_interval_ms, result, error_code, error_message, cancel_requested, run_attempt, \
             generation, next_run_at, cut_next_sleep, principal, version, list_scope FROM task ",
            $filter
        )
    };
}

/// Reads one task row. Parameter: task id.
pub const SELECT_TASK: &str = select_tasks!("WHERE task_id = ?1");

/// The first tasks of a listing, oldest first. Parameters: scope, limit.
pub const SELECT_LISTED: &str =
    select_tasks!("WHERE list_scope = ?1 ORDER BY created_at, task_id LIMIT ?2");

/// The tasks of a listing strictly after a position, oldest first. Parameters: scope, the
/// position's `created_at` and `task_id`, limit. The plain range on `created_at` lets the
/// index start at the position; the rest only drops the tasks of that millisecond up to it.
pub const SELECT_LISTED_AFTER: &str = select_tasks!(
    "WHERE list_scope = ?1 AND created_at >= ?2 AND (created_at > ?2 OR task_id > ?3) \
     ORDER BY created_at, task_id LIMIT ?4"
);

/// Inserts a task unless one with the id exists. Parameters: [`task_params`].
pub const INSERT_TASK: &str = "INSERT OR IGNORE INTO task (task_id, tool_name, input, status, \
    status_message, status_meta, status_published, created_at, last_updated_at, finished_at, \
    ttl_ms, poll_interval_ms, result, error_code, error_message, cancel_requested, run_attempt, \
    generation, next_run_at, cut_next_sleep, principal, version, list_scope) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, \
    ?20, ?21, ?22, ?23)";

/// Replaces every column of a task row but its id, version and listing scope. Parameters:
/// [`task_params`] without the last two (`version`, `list_scope`).
pub const PUT_TASK: &str = "UPDATE task SET tool_name = ?2, input = ?3, status = ?4, \
    status_message = ?5, status_meta = ?6, status_published = ?7, created_at = ?8, \
    last_updated_at = ?9, finished_at = ?10, ttl_ms = ?11, poll_interval_ms = ?12, result = ?13, \
    error_code = ?14, error_message = ?15, cancel_requested = ?16, run_attempt = ?17, \
    generation = ?18, next_run_at = ?19, cut_next_sleep = ?20, principal = ?21 \
    WHERE task_id = ?1";

/// Checks a guard and bumps the version in one statement, for writes that change the task row.
/// Parameters: task id, expected version (or NULL), expected generation (or NULL). Returns
/// `cancel_requested` when the guard holds.
pub const GUARD_AND_BUMP: &str = "UPDATE task SET version = version + 1 WHERE task_id = ?1 \
    AND (?2 IS NULL OR version = ?2) AND (?3 IS NULL OR generation = ?3) \
    RETURNING cancel_requested";

/// Checks a guard without writing, for writes of step and input rows only. Parameters and
/// result as [`GUARD_AND_BUMP`].
pub const GUARD: &str = "SELECT cancel_requested FROM task WHERE task_id = ?1 \
    AND (?2 IS NULL OR version = ?2) AND (?3 IS NULL OR generation = ?3)";

/// The columns a [`Guard`](super::journal::Guard) checks, and the cancel flag, for a store
/// that keeps them in memory between writes. Parameter: task id.
pub const SELECT_GUARD_COLUMNS: &str =
    "SELECT version, generation, cancel_requested FROM task WHERE task_id = ?1";

/// Publishes a status message. Parameters: task id, message, meta (NULL keeps), ordinal, time.
pub const PUBLISH_STATUS: &str = "UPDATE task SET status_message = ?2, \
    status_meta = COALESCE(?3, status_meta), status_published = ?4, last_updated_at = ?5 \
    WHERE task_id = ?1";

/// Moves a working task to `input_required`. Parameters: task id, time.
pub const AWAIT_INPUT: &str = "UPDATE task SET status = 'input_required', last_updated_at = ?2 \
    WHERE task_id = ?1 AND status = 'working'";

/// Clears the cut-next-sleep flag. Parameter: task id.
pub const CLEAR_SLEEP_CUT: &str = "UPDATE task SET cut_next_sleep = 0 WHERE task_id = ?1";

/// Inserts or replaces a step row. Parameters: task id, then [`step_params`].
pub const PUT_STEP: &str = "INSERT OR REPLACE INTO steps (task_id, step_key, kind, status, \
    result, attempt, next_attempt_at, wake_at, last_error, seq, created_at, completed_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

/// Inserts or replaces many step rows at once. Parameter: a JSON array of rows, each an array
/// of [`step_params`] in order (see [`write_json_row`]); a later row replaces an earlier
/// one with the same key.
pub const PUT_STEPS_JSON: &str = "INSERT OR REPLACE INTO steps (task_id, step_key, kind, \
    status, result, attempt, next_attempt_at, wake_at, last_error, seq, created_at, \
    completed_at) SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, \
    value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 10, \
    value ->> 11 FROM json_each(?1) ORDER BY key";

/// Inserts or replaces an input request row. Parameters: task id, then [`input_params`].
pub const PUT_INPUT: &str = "INSERT OR REPLACE INTO input_requests (task_id, key, request, \
    response, answered, answered_at, timeout_at, timed_out, blocking, consumed, seq, created_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

macro_rules! select_steps {
    ($filter:literal) => {
        concat!(
            "SELECT step_key, kind, status, result, attempt, next_attempt_at, wake_at, \
             last_error, seq, created_at, completed_at FROM steps WHERE task_id = ?1",
            $filter
        )
    };
}

/// Every step row of a task. Parameter: task id.
pub const SELECT_STEPS: &str = select_steps!("");

/// The pending step rows of a task. Parameter: task id.
pub const SELECT_PENDING_STEPS: &str = select_steps!(" AND status = 'pending'");

macro_rules! select_inputs {
    ($filter:literal) => {
        concat!(
            "SELECT key, request, response, answered, answered_at, timeout_at, timed_out, \
             blocking, consumed, seq, created_at FROM input_requests WHERE task_id = ?1",
            $filter
        )
    };
}

/// Every input request row of a task. Parameter: task id.
pub const SELECT_INPUTS: &str = select_inputs!("");

/// One input request row. Parameters: task id, key.
pub const SELECT_INPUT: &str = select_inputs!(" AND key = ?2");

/// Deletes every row of a task, one statement per table. Parameter: task id.
pub const PURGE: [&str; 3] = [
    "DELETE FROM steps WHERE task_id = ?1",
    "DELETE FROM input_requests WHERE task_id = ?1",
    "DELETE FROM task WHERE task_id = ?1",
];

/// The ids of every stored task. No parameters.
pub const SELECT_TASK_IDS: &str = "SELECT task_id FROM task ORDER BY created_at, task_id";

// ---- The index of one listing scope (a Cloudflare TaskIndex object's own tables) ----

/// The table of a scope's index: each listed task's id and its position's time. Idempotent.
pub const CREATE_INDEX_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS listed (
    task_id TEXT PRIMARY KEY NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS listed_order ON listed (created_at, task_id);
";

/// One row if the index's table exists.
pub const SELECT_INDEX_TABLE: &str =
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'listed'";

/// Records an id unless it is there (its first position stays). Parameters: task id, time.
pub const INDEX_ADD: &str = "INSERT OR IGNORE INTO listed (task_id, created_at) VALUES (?1, ?2)";

/// The first entries, in order. Parameter: limit. Rows: created_at, task_id.
pub const INDEX_FIRST: &str =
    "SELECT created_at, task_id FROM listed ORDER BY created_at, task_id LIMIT ?1";

/// The entries strictly after a position, in order. Parameters: the position's `created_at`
/// and `task_id`, limit. Rows: created_at, task_id.
pub const INDEX_AFTER: &str = "SELECT created_at, task_id FROM listed \
    WHERE created_at >= ?1 AND (created_at > ?1 OR task_id > ?2) \
    ORDER BY created_at, task_id LIMIT ?3";

/// Forgets ids. Parameter: a JSON array of task ids.
pub const INDEX_REMOVE: &str =
    "DELETE FROM listed WHERE task_id IN (SELECT value FROM json_each(?1))";

/// Whether any entry is left: one row if so.
pub const INDEX_ANY: &str = "SELECT 1 FROM listed LIMIT 1";

/// The statement and parameters that read up to `limit` index entries strictly after `after`
/// (from the first when `None`); rows as [`index_entry_from_row`] reads.
pub fn index_page_statement(
    after: Option<&ListPosition>,
    limit: usize,
) -> (&'static str, Vec<SqlValue>) {
    let limit = int(u64::try_from(limit).unwrap_or(u64::MAX));
    match after {
        None => (INDEX_FIRST, vec![limit]),
        Some(after) => (
            INDEX_AFTER,
            vec![
                int(after.created_at.as_millis()),
                after.task_id.as_str().into(),
                limit,
            ],
        ),
    }
}

/// The parameters of [`INDEX_ADD`].
pub fn index_add_params(task_id: &str, at: Timestamp) -> Vec<SqlValue> {
    vec![task_id.into(), int(at.as_millis())]
}

/// The parameter of [`INDEX_REMOVE`].
pub fn index_remove_params(task_ids: &[String]) -> Vec<SqlValue> {
    let json = serde_json::to_string(task_ids).expect("a list of strings always serialises");
    vec![SqlValue::Text(json)]
}

/// Reads a row of [`INDEX_FIRST`] or [`INDEX_AFTER`].
pub fn index_entry_from_row(row: &(impl SqlRow + ?Sized)) -> Result<ListPosition, RowError> {
    let r = Reader(row);
    Ok(ListPosition {
        created_at: r.time(0)?,
        task_id: r.text(1)?,
    })
}

/// A value bound to a statement parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SqlValue {
    /// NULL.
    Null,
    /// An INTEGER.
    Integer(i64),
    /// A TEXT.
    Text(String),
}

/// Appends `values` to `out` as a JSON array, which SQLite's `->>` reads back value by value
/// as the same SQL values (the rows of [`PUT_STEPS_JSON`]).
pub fn write_json_row(out: &mut Vec<u8>, values: &[SqlValue]) {
    out.push(b'[');
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match value {
            SqlValue::Null => out.extend_from_slice(b"null"),
            SqlValue::Integer(integer) => out.extend_from_slice(integer.to_string().as_bytes()),
            SqlValue::Text(text) => {
                serde_json::to_writer(&mut *out, text).expect("a str always serialises")
            }
        }
    }
    out.push(b']');
}

impl SqlValue {
    /// About how many bytes the value takes in a statement or as JSON.
    pub fn size(&self) -> usize {
        match self {
            SqlValue::Null | SqlValue::Integer(_) => 8,
            SqlValue::Text(text) => text.len() + 2,
        }
    }
}

impl From<Option<String>> for SqlValue {
    fn from(value: Option<String>) -> Self {
        value.map_or(SqlValue::Null, SqlValue::Text)
    }
}

impl From<&str> for SqlValue {
    fn from(value: &str) -> Self {
        SqlValue::Text(value.to_owned())
    }
}

fn int(value: u64) -> SqlValue {
    SqlValue::Integer(i64::try_from(value).unwrap_or(i64::MAX))
}

fn opt_time(value: Option<Timestamp>) -> SqlValue {
    value.map_or(SqlValue::Null, |t| int(t.as_millis()))
}

fn flag(value: bool) -> SqlValue {
    SqlValue::Integer(i64::from(value))
}

/// A row being read: the column at `index` as an integer or text (`None` for NULL).
pub trait SqlRow {
    /// The integer in column `index`, `None` if NULL.
    fn integer(&self, index: usize) -> Result<Option<i64>, RowError>;
    /// The text in column `index`, `None` if NULL.
    fn text(&self, index: usize) -> Result<Option<String>, RowError>;
}

/// A row that does not hold what the schema says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("corrupt row: column {column}: {reason}")]
pub struct RowError {
    /// The column index.
    pub column: usize,
    /// What is wrong.
    pub reason: String,
}

struct Reader<'r, R: SqlRow + ?Sized>(&'r R);

impl<R: SqlRow + ?Sized> Reader<'_, R> {
    fn missing(column: usize) -> RowError {
        RowError {
            column,
            reason: "unexpected NULL".into(),
        }
    }
    fn text(&self, i: usize) -> Result<String, RowError> {
        self.0.text(i)?.ok_or_else(|| Self::missing(i))
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, RowError> {
        self.0.text(i)
    }
    fn uint(&self, i: usize) -> Result<u64, RowError> {
        self.opt_uint(i)?.ok_or_else(|| Self::missing(i))
    }
    fn opt_uint(&self, i: usize) -> Result<Option<u64>, RowError> {
        self.0
            .integer(i)?
            .map(|v| {
                u64::try_from(v).map_err(|_| RowError {
                    column: i,
                    reason: format!("negative value {v}"),
                })
            })
            .transpose()
    }
    fn u32(&self, i: usize) -> Result<u32, RowError> {
        let v = self.uint(i)?;
        u32::try_from(v).map_err(|_| RowError {
            column: i,
            reason: format!("{v} is out of range"),
        })
    }
    fn flag(&self, i: usize) -> Result<bool, RowError> {
        Ok(self.uint(i)? != 0)
    }
    fn time(&self, i: usize) -> Result<Timestamp, RowError> {
        self.uint(i).map(Timestamp)
    }
    fn opt_time(&self, i: usize) -> Result<Option<Timestamp>, RowError> {
        Ok(self.opt_uint(i)?.map(Timestamp))
    }
    fn parsed<T>(&self, i: usize, parse: impl Fn(&str) -> Option<T>) -> Result<T, RowError> {
        let text = self.text(i)?;
        parse(&text).ok_or_else(|| RowError {
            column: i,
            reason: format!("unknown value {text:?}"),
        })
    }
}

/// The parameters of [`INSERT_TASK`] and [`PUT_TASK`].
pub fn task_params(task: &TaskRecord) -> Vec<SqlValue> {
    vec![
        task.task_id.as_str().into(),
        task.tool_name.as_str().into(),
        task.input.as_str().into(),
        task.status.as_str().into(),
        task.status_message.clone().into(),
        task.status_meta.clone().into(),
        int(u64::from(task.status_published)),
        int(task.created_at.as_millis()),
        int(task.last_updated_at.as_millis()),
        opt_time(task.finished_at),
        task.ttl.map_or(SqlValue::Null, |t| int(duration_millis(t))),
        int(duration_millis(task.poll_interval)),
        task.result.clone().into(),
        task.error
            .as_ref()
            .map_or(SqlValue::Null, |e| SqlValue::Integer(e.code)),
        task.error.as_ref().map(|e| e.message.clone()).into(),
        flag(task.cancel_requested),
        int(u64::from(task.run_attempt)),
        int(task.generation),
        opt_time(task.next_run_at),
        flag(task.cut_next_sleep),
        task.principal.clone().into(),
        int(task.version),
        task.list_scope.clone().into(),
    ]
}

/// Reads a row of [`SELECT_TASK`].
pub fn task_from_row(row: &(impl SqlRow + ?Sized)) -> Result<TaskRecord, RowError> {
    let r = Reader(row);
    let error = match (r.0.integer(13)?, r.opt_text(14)?) {
        (Some(code), Some(message)) => Some(TaskFailure { code, message }),
        _ => None,
    };
    Ok(TaskRecord {
        task_id: r.text(0)?,
        tool_name: r.text(1)?,
        input: r.text(2)?,
        status: r.parsed(3, TaskStatus::parse)?,
        status_message: r.opt_text(4)?,
        status_meta: r.opt_text(5)?,
        status_published: r.u32(6)?,
        created_at: r.time(7)?,
        last_updated_at: r.time(8)?,
        finished_at: r.opt_time(9)?,
        ttl: r.opt_uint(10)?.map(Duration::from_millis),
        poll_interval: Duration::from_millis(r.uint(11)?),
        result: r.opt_text(12)?,
        error,
        cancel_requested: r.flag(15)?,
        run_attempt: r.u32(16)?,
        generation: r.uint(17)?,
        next_run_at: r.opt_time(18)?,
        cut_next_sleep: r.flag(19)?,
        principal: r.opt_text(20)?,
        version: r.uint(21)?,
        list_scope: r.opt_text(22)?,
    })
}

/// The parameters of [`PUT_STEP`].
pub fn step_params(task_id: &str, step: &StepRow) -> Vec<SqlValue> {
    vec![
        task_id.into(),
        step.key.as_str().into(),
        step.kind.as_str().into(),
        step.status.as_str().into(),
        step.result.clone().into(),
        int(u64::from(step.attempt)),
        opt_time(step.next_attempt_at),
        opt_time(step.wake_at),
        step.last_error.clone().into(),
        int(step.seq),
        int(step.created_at.as_millis()),
        opt_time(step.completed_at),
    ]
}

/// Reads a row of [`SELECT_STEPS`].
pub fn step_from_row(row: &(impl SqlRow + ?Sized)) -> Result<StepRow, RowError> {
    let r = Reader(row);
    Ok(StepRow {
        key: r.text(0)?,
        kind: r.parsed(1, StepKind::parse_step)?,
        status: r.parsed(2, StepStatus::parse)?,
        result: r.opt_text(3)?,
        attempt: r.u32(4)?,
        next_attempt_at: r.opt_time(5)?,
        wake_at: r.opt_time(6)?,
        last_error: r.opt_text(7)?,
        seq: r.uint(8)?,
        created_at: r.time(9)?,
        completed_at: r.opt_time(10)?,
    })
}

/// The parameters of [`PUT_INPUT`].
pub fn input_params(task_id: &str, input: &InputRow) -> Vec<SqlValue> {
    vec![
        task_id.into(),
        input.key.as_str().into(),
        input.request.as_str().into(),
        input.response.clone().into(),
        flag(input.answered),
        opt_time(input.answered_at),
        opt_time(input.timeout_at),
        flag(input.timed_out),
        flag(input.blocking),
        flag(input.consumed),
        int(input.seq),
        int(input.created_at.as_millis()),
    ]
}

/// Reads a row of [`SELECT_INPUTS`].
pub fn input_from_row(row: &(impl SqlRow + ?Sized)) -> Result<InputRow, RowError> {
    let r = Reader(row);
    Ok(InputRow {
        key: r.text(0)?,
        request: r.text(1)?,
        response: r.opt_text(2)?,
        answered: r.flag(3)?,
        answered_at: r.opt_time(4)?,
        timeout_at: r.opt_time(5)?,
        timed_out: r.flag(6)?,
        blocking: r.flag(7)?,
        consumed: r.flag(8)?,
        seq: r.uint(9)?,
        created_at: r.time(10)?,
    })
}

/// The statement and parameters that carry out one write on a SQL store.
pub fn write_statement(task_id: &str, write: &Write) -> (&'static str, Vec<SqlValue>) {
    match write {
        Write::PutTask(task) => {
            // PUT_TASK leaves `version` to the guard and `list_scope` as created: the last two.
            let mut params = task_params(task);
            params.truncate(params.len() - 2);
            (PUT_TASK, params)
        }
        Write::PutStep(step) => (PUT_STEP, step_params(task_id, step)),
        Write::PutInput(input) => (PUT_INPUT, input_params(task_id, input)),
        Write::PublishStatus {
            message,
            meta,
            published,
            at,
        } => (
            PUBLISH_STATUS,
            vec![
                task_id.into(),
                message.as_str().into(),
                meta.clone().into(),
                int(u64::from(*published)),
                int(at.as_millis()),
            ],
        ),
        Write::AwaitInput { at } => (AWAIT_INPUT, vec![task_id.into(), int(at.as_millis())]),
        Write::ClearSleepCut => (CLEAR_SLEEP_CUT, vec![task_id.into()]),
    }
}

/// The statement and parameters that read up to `limit` tasks of the listing `scope` strictly
/// after `after` (from the start when `None`), oldest first; rows as [`task_from_row`] reads.
pub fn listed_statement(
    scope: &str,
    after: Option<&ListPosition>,
    limit: usize,
) -> (&'static str, Vec<SqlValue>) {
    let limit = int(u64::try_from(limit).unwrap_or(u64::MAX));
    match after {
        None => (SELECT_LISTED, vec![scope.into(), limit]),
        Some(after) => (
            SELECT_LISTED_AFTER,
            vec![
                scope.into(),
                int(after.created_at.as_millis()),
                after.task_id.as_str().into(),
                limit,
            ],
        ),
    }
}

/// The parameters of [`GUARD`] and [`GUARD_AND_BUMP`].
pub fn guard_params(task_id: &str, guard: super::journal::Guard) -> Vec<SqlValue> {
    vec![
        task_id.into(),
        guard.version.map_or(SqlValue::Null, int),
        guard.generation.map_or(SqlValue::Null, int),
    ]
}

#[cfg(test)]
mod tests {
    use super::{ADDED_COLUMNS, CREATE_INDEXES, CREATE_SCHEMA, upgrade};

    /// The `task` table as the first version created it.
    const FIRST_TASK_TABLE: &str = "CREATE TABLE task (task_id TEXT PRIMARY KEY NOT NULL, \
        principal TEXT, version INTEGER NOT NULL)";

    #[test]
    fn upgrade_creates_missing_tables_and_adds_missing_columns_only() {
        assert_eq!(upgrade(None), [CREATE_SCHEMA, CREATE_INDEXES]);
        assert_eq!(
            upgrade(Some(FIRST_TASK_TABLE)),
            [ADDED_COLUMNS[0].add, CREATE_INDEXES]
        );
        let current = format!(
            "{}, list_scope TEXT)",
            FIRST_TASK_TABLE.trim_end_matches(')')
        );
        assert_eq!(upgrade(Some(&current)), Vec::<&str>::new());
        // A name that only contains the column's is not the column.
        let lookalike = FIRST_TASK_TABLE.replace("principal", "old_list_scope_x");
        assert_eq!(upgrade(Some(&lookalike)).len(), 2);
    }

    #[test]
    fn task_statements_list_every_column_once() {
        let columns: Vec<&str> = super::TASK_COLUMNS.split(", ").collect();
        assert_eq!(columns.len(), 23);
        for column in &columns {
            assert!(super::SELECT_TASK.contains(column), "{column}");
            assert!(super::INSERT_TASK.contains(column), "{column}");
            assert!(super::CREATE_SCHEMA.contains(column), "{column}");
        }
    }
}
