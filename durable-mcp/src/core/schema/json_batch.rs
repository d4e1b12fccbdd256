//! Writing many step rows in one statement: the rows go in as one JSON array parameter, which
//! SQLite takes apart with `json_each` and `->>`.
//!
//! The Durable Object store uses it to write a turn's step rows at once (each statement it runs
//! crosses from wasm into the runtime). It lives here rather than beside that store because the
//! Workers host builds only for wasm32: here the native tests can check, against a real
//! SQLite, that a batch stores exactly what one `PUT_STEP` per row stores.

use super::value::SqlValue;

/// Inserts or replaces many step rows at once. Parameter: a JSON array of rows, each an array
/// of [`step_params`](super::step_params) in order (see [`write_json_row`]); a later row
/// replaces an earlier one with the same key.
pub const PUT_STEPS_JSON: &str = "INSERT OR REPLACE INTO steps (task_id, step_key, kind, \
    status, result, attempt, next_attempt_at, wake_at, last_error, seq, created_at, \
    completed_at) SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, \
    value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 10, \
    value ->> 11 FROM json_each(?1) ORDER BY key";

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
