//! The statements a SQL store runs on its tables: reading, creating and writing tasks, their
//! step and input rows, the guard every write checks first, and purging.
//!
//! Each constant says its parameters; [`super::codec`] builds them from records and reads the
//! rows back, so the order of columns is written down once per statement.

/// The columns of `task`, in the order of [`task_params`](super::task_params) and
/// [`task_from_row`](super::task_from_row).
#[cfg(test)]
const TASK_COLUMNS: &str = "task_id, tool_name, input, status, status_message, status_meta, \
    status_published, created_at, last_updated_at, finished_at, ttl_ms, poll_interval_ms, result, \
    error_code, error_message, cancel_requested, run_attempt, generation, next_run_at, \
    cut_next_sleep, principal, parent, run_cause, version, list_scope, code_version";

macro_rules! select_tasks {
    ($filter:literal) => {
        concat!(
            "SELECT task_id, tool_name, input, status, status_message, status_meta, \
             status_published, created_at, last_updated_at, finished_at, ttl_ms, \
             poll_interval_ms, result, error_code, error_message, cancel_requested, run_attempt, \
             generation, next_run_at, cut_next_sleep, principal, parent, run_cause, version, \
             list_scope, code_version \
             FROM task ",
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

/// The first tasks of every scope (and of none), oldest first: an operator's inspector.
/// Parameter: limit.
pub const SELECT_EVERY: &str = select_tasks!("ORDER BY created_at, task_id LIMIT ?1");

/// The tasks of every scope strictly after a position, oldest first. Parameters: the
/// position's `created_at` and `task_id`, limit.
pub const SELECT_EVERY_AFTER: &str = select_tasks!(
    "WHERE created_at >= ?1 AND (created_at > ?1 OR task_id > ?2) \
     ORDER BY created_at, task_id LIMIT ?3"
);

/// Inserts a task unless one with the id exists. Parameters: [`task_params`](super::task_params).
pub const INSERT_TASK: &str = "INSERT OR IGNORE INTO task (task_id, tool_name, input, status, \
    status_message, status_meta, status_published, created_at, last_updated_at, finished_at, \
    ttl_ms, poll_interval_ms, result, error_code, error_message, cancel_requested, run_attempt, \
    generation, next_run_at, cut_next_sleep, principal, parent, run_cause, version, list_scope, \
    code_version) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, \
    ?20, ?21, ?22, ?23, ?24, ?25, ?26)";

/// Replaces every column of a task row but its id, its version and what creation fixed (its
/// listing scope and code version). Parameters: [`task_params`](super::task_params) without the
/// last three (`version`, `list_scope`, `code_version`).
pub const PUT_TASK: &str = "UPDATE task SET tool_name = ?2, input = ?3, status = ?4, \
    status_message = ?5, status_meta = ?6, status_published = ?7, created_at = ?8, \
    last_updated_at = ?9, finished_at = ?10, ttl_ms = ?11, poll_interval_ms = ?12, result = ?13, \
    error_code = ?14, error_message = ?15, cancel_requested = ?16, run_attempt = ?17, \
    generation = ?18, next_run_at = ?19, cut_next_sleep = ?20, principal = ?21, parent = ?22, \
    run_cause = ?23 WHERE task_id = ?1";

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

/// The columns a [`Guard`](crate::core::journal::Guard) checks, and the cancel flag, for a store
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

/// Inserts or replaces a step row. Parameters: task id, then [`step_params`](super::step_params).
pub const PUT_STEP: &str = "INSERT OR REPLACE INTO steps (task_id, step_key, kind, status, \
    result, attempt, next_attempt_at, wake_at, last_error, seq, created_at, completed_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

/// Inserts or replaces an input request row. Parameters: task id, then
/// [`input_params`](super::input_params).
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

#[cfg(test)]
mod tests {
    use crate::core::schema::CREATE_SCHEMA;

    #[test]
    fn task_statements_list_every_column_once() {
        let columns: Vec<&str> = super::TASK_COLUMNS.split(", ").collect();
        assert_eq!(columns.len(), 26);
        for column in &columns {
            assert!(super::SELECT_TASK.contains(column), "{column}");
            assert!(super::INSERT_TASK.contains(column), "{column}");
            assert!(CREATE_SCHEMA.contains(column), "{column}");
        }
    }
}
