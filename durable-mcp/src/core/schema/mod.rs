//! The SQL of every store that speaks SQLite, and the mapping between rows and records.
//!
//! The native store (rusqlite) and the Durable Object store execute exactly these statements,
//! bind parameters from [`SqlValue`]s and read rows through [`SqlRow`], so the two can never
//! drift apart in meaning. Each part has one job:
//!
//! - `ddl`: creating the tables, and upgrading tables an earlier version created;
//! - `statements`: the statements run on those tables;
//! - `value`: the values bound and read, and the error of a row that does not decode;
//! - `codec`: records to parameters and rows back to records;
//! - `json_batch`: many step rows written by one statement;
//! - `index`: the table of a listing scope's index (a Cloudflare `TaskIndex` object's).
//!
//! Callers name items through this module; the parts are private so that moving an item between
//! them changes no caller.

mod codec;
mod ddl;
mod index;
mod json_batch;
mod statements;
mod value;

pub use codec::{
    every_task_statement, guard_params, input_from_row, input_params, listed_statement,
    step_from_row, step_params, task_from_row, task_params, write_statement,
};
pub use ddl::{
    ADDED_COLUMNS, AddedColumn, CREATE_INDEXES, CREATE_SCHEMA, SELECT_TASK_TABLE, upgrade,
};
pub use index::{
    CREATE_INDEX_SCHEMA, INDEX_ADD, INDEX_AFTER, INDEX_ANY, INDEX_FIRST, INDEX_REMOVE,
    SELECT_INDEX_TABLE, index_add_params, index_entry_from_row, index_page_statement,
    index_remove_params,
};
pub use json_batch::{PUT_STEPS_JSON, write_json_row};
pub use statements::{
    AWAIT_INPUT, CLEAR_SLEEP_CUT, GUARD, GUARD_AND_BUMP, INSERT_TASK, PUBLISH_STATUS, PURGE,
    PUT_INPUT, PUT_STEP, PUT_TASK, SELECT_GUARD_COLUMNS, SELECT_INPUT, SELECT_INPUTS,
    SELECT_LISTED, SELECT_LISTED_AFTER, SELECT_PENDING_STEPS, SELECT_STEPS, SELECT_TASK,
    SELECT_TASK_IDS,
};
pub use value::{RowError, SqlRow, SqlValue};
