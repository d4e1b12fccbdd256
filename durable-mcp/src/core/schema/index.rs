//! The SQL of a listing scope's index: the table a Cloudflare `TaskIndex` object keeps of the
//! tasks listed in its scope, in `(created_at, task_id)` order, and the parameters and rows of
//! its statements.
//!
//! Only the Workers host runs it, but it lives here rather than beside that host because the
//! host builds only for wasm32: here the native tests can run it against a real SQLite.

use super::value::{Reader, RowError, SqlRow, SqlValue, int};
use crate::core::listing::ListPosition;
use crate::core::time::Timestamp;

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
