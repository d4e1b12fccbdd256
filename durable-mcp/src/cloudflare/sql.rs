//! Statements on a Durable Object's SQLite storage, with as few crossings into JavaScript as a
//! journal write allows.
//!
//! workers-rs's `SqlStorage::exec` converts the statement's text into a JavaScript string on
//! every call, builds its parameters one call at a time (checking each integer in JavaScript),
//! and leaves the cursor to be read. Each of those crosses between wasm and JavaScript, and for
//! a write as small as a step row the crossings cost more than the insert. Here a statement's
//! text is converted once per object instance, `exec` is called with every argument at once,
//! and a write's cursor is never read: `exec` runs a statement that returns no rows to
//! completion before it returns.

use std::cell::RefCell;
use std::collections::HashMap;

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use worker::js_sys::{self, Array, Function, JsString};

use crate::core::schema::{RowError, SqlRow, SqlValue};
use crate::runtime::StoreError;

#[wasm_bindgen]
extern "C" {
    /// `ctx.storage.sql`.
    type SqlStorage;

    /// `exec(query, ...bindings)`: runs the statement up to its first row and returns the
    /// cursor.
    #[wasm_bindgen(method, catch, variadic)]
    fn exec(this: &SqlStorage, query: &JsString, bindings: &Array) -> Result<JsValue, JsValue>;
}

/// The `SqlStorage` of one object, and the statements it has run.
pub(crate) struct Sql {
    storage: SqlStorage,
    /// Each statement's text as a JavaScript string, by its Rust text (every statement is a
    /// constant, so the map stays as small as the schema).
    texts: RefCell<HashMap<&'static str, JsString>>,
}

impl Sql {
    /// The statements of `storage` (`ctx.storage.sql`).
    pub(crate) fn new(storage: &worker::SqlStorage) -> Self {
        let storage: &JsValue = storage.as_ref();
        Sql {
            storage: storage.clone().unchecked_into(),
            texts: RefCell::default(),
        }
    }

    /// Runs `query`, which returns no rows, to completion.
    pub(crate) fn execute(
        &self,
        query: &'static str,
        params: Vec<SqlValue>,
    ) -> Result<(), StoreError> {
        self.exec(query, params).map(drop)
    }

    /// Every row `query` returns, as column values.
    pub(crate) fn rows(
        &self,
        query: &'static str,
        params: Vec<SqlValue>,
    ) -> Result<Vec<Row>, StoreError> {
        let cursor = self.exec(query, params)?;
        let raw: Function = js_sys::Reflect::get(&cursor, &"raw".into())
            .map_err(js_error)?
            .dyn_into()
            .map_err(|_| StoreError("Durable Object SQLite: a cursor without `raw`".into()))?;
        let rows = raw.call0(&cursor).map_err(js_error)?;
        let rows = js_sys::try_iter(&rows)
            .map_err(js_error)?
            .ok_or_else(|| StoreError("Durable Object SQLite: `raw()` is not iterable".into()))?;
        rows.map(|row| {
            row.map(|row| Row(Array::from(&row).to_vec()))
                .map_err(js_error)
        })
        .collect()
    }

    fn exec(&self, query: &'static str, params: Vec<SqlValue>) -> Result<JsValue, StoreError> {
        let bindings: Array = params.into_iter().map(js_value).collect();
        self.storage
            .exec(&self.text(query), &bindings)
            .map_err(js_error)
    }

    fn text(&self, query: &'static str) -> JsString {
        self.texts
            .borrow_mut()
            .entry(query)
            .or_insert_with(|| JsString::from(query))
            .clone()
    }
}

fn js_value(value: SqlValue) -> JsValue {
    match value {
        SqlValue::Null => JsValue::NULL,
        // The journal's integers (times in milliseconds, counters) are far inside f64's exact
        // range.
        #[allow(clippy::cast_precision_loss)]
        SqlValue::Integer(integer) => JsValue::from_f64(integer as f64),
        SqlValue::Text(text) => JsValue::from_str(&text),
    }
}

/// A JavaScript error from the storage API, as a store error.
pub(crate) fn js_error(error: JsValue) -> StoreError {
    StoreError(format!(
        "Durable Object SQLite: {}",
        error.as_string().unwrap_or_else(|| format!("{error:?}"))
    ))
}

/// The largest integer a JavaScript number holds exactly (2^53 - 1).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// One row's column values, as JavaScript gave them.
pub(crate) struct Row(Vec<JsValue>);

impl SqlRow for Row {
    fn integer(&self, index: usize) -> Result<Option<i64>, RowError> {
        let value = self.column(index)?;
        if value.is_null() {
            return Ok(None);
        }
        match value.as_f64() {
            // JavaScript numbers: an integer column comes back as a number without a fraction,
            // exact up to Number.MAX_SAFE_INTEGER.
            Some(number) if number.fract() == 0.0 && number.abs() <= MAX_SAFE_INTEGER =>
            {
                #[allow(clippy::cast_possible_truncation)]
                Ok(Some(number as i64))
            }
            _ => Err(RowError {
                column: index,
                reason: format!("expected an integer, found {value:?}"),
            }),
        }
    }

    fn text(&self, index: usize) -> Result<Option<String>, RowError> {
        let value = self.column(index)?;
        if value.is_null() {
            return Ok(None);
        }
        value.as_string().map(Some).ok_or_else(|| RowError {
            column: index,
            reason: format!("expected text, found {value:?}"),
        })
    }
}

impl Row {
    fn column(&self, index: usize) -> Result<&JsValue, RowError> {
        self.0.get(index).ok_or_else(|| RowError {
            column: index,
            reason: "the row has no such column".to_owned(),
        })
    }
}
