//! Creating a store's tables, and bringing tables an earlier version created to the current
//! schema.
//!
//! A store checks on every start: it reads the `task` table's `CREATE TABLE` text with
//! [`SELECT_TASK_TABLE`] and runs what [`upgrade`] returns, which is nothing once the tables are
//! current. Columns added since the first version are listed in [`ADDED_COLUMNS`], so an old
//! database gains them in place and keeps its rows.

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
    list_scope TEXT,
    code_version TEXT,
    parent TEXT,
    run_cause TEXT
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
pub const ADDED_COLUMNS: [AddedColumn; 4] = [
    AddedColumn {
        name: "list_scope",
        add: "ALTER TABLE task ADD COLUMN list_scope TEXT",
    },
    AddedColumn {
        name: "code_version",
        add: "ALTER TABLE task ADD COLUMN code_version TEXT",
    },
    AddedColumn {
        name: "parent",
        add: "ALTER TABLE task ADD COLUMN parent TEXT",
    },
    AddedColumn {
        name: "run_cause",
        add: "ALTER TABLE task ADD COLUMN run_cause TEXT",
    },
];

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
            [
                ADDED_COLUMNS[0].add,
                ADDED_COLUMNS[1].add,
                ADDED_COLUMNS[2].add,
                ADDED_COLUMNS[3].add,
                CREATE_INDEXES
            ]
        );
        let first = FIRST_TASK_TABLE.trim_end_matches(')');
        let second = format!("{first}, list_scope TEXT)");
        assert_eq!(
            upgrade(Some(&second)),
            [
                ADDED_COLUMNS[1].add,
                ADDED_COLUMNS[2].add,
                ADDED_COLUMNS[3].add,
                CREATE_INDEXES
            ]
        );
        let current =
            format!("{first}, list_scope TEXT, code_version TEXT, parent TEXT, run_cause TEXT)");
        assert_eq!(upgrade(Some(&current)), Vec::<&str>::new());
        // A name that only contains the column's is not the column.
        let lookalike = FIRST_TASK_TABLE.replace("principal", "old_list_scope_x");
        assert_eq!(upgrade(Some(&lookalike)).len(), 5);
    }
}
