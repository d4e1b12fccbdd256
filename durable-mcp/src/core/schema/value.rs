//! The values a SQL store binds and reads: [`SqlValue`] for a statement's parameters,
//! [`SqlRow`] for a row being read, and [`RowError`] for a row that does not hold what the
//! schema says.
//!
//! Both stores speak these rather than their driver's types, so the same codec serves rusqlite
//! and the Durable Object's SQL API.

use crate::core::time::Timestamp;

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

/// An unsigned count, time or id as an INTEGER; SQLite's integers are signed, so values past
/// `i64::MAX` saturate rather than wrap to negative.
pub(super) fn int(value: u64) -> SqlValue {
    SqlValue::Integer(i64::try_from(value).unwrap_or(i64::MAX))
}

/// A time in milliseconds, or NULL.
pub(super) fn opt_time(value: Option<Timestamp>) -> SqlValue {
    value.map_or(SqlValue::Null, |t| int(t.as_millis()))
}

/// A boolean as SQLite stores one: 0 or 1.
pub(super) fn flag(value: bool) -> SqlValue {
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

/// Reads a row's columns as the types the records hold, turning a NULL where the schema has
/// none, a negative count or an unknown name into a [`RowError`] that names the column.
pub(super) struct Reader<'r, R: SqlRow + ?Sized>(pub(super) &'r R);

impl<R: SqlRow + ?Sized> Reader<'_, R> {
    fn missing(column: usize) -> RowError {
        RowError {
            column,
            reason: "unexpected NULL".into(),
        }
    }
    pub(super) fn text(&self, i: usize) -> Result<String, RowError> {
        self.0.text(i)?.ok_or_else(|| Self::missing(i))
    }
    pub(super) fn opt_text(&self, i: usize) -> Result<Option<String>, RowError> {
        self.0.text(i)
    }
    pub(super) fn uint(&self, i: usize) -> Result<u64, RowError> {
        self.opt_uint(i)?.ok_or_else(|| Self::missing(i))
    }
    pub(super) fn opt_uint(&self, i: usize) -> Result<Option<u64>, RowError> {
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
    pub(super) fn u32(&self, i: usize) -> Result<u32, RowError> {
        let v = self.uint(i)?;
        u32::try_from(v).map_err(|_| RowError {
            column: i,
            reason: format!("{v} is out of range"),
        })
    }
    pub(super) fn flag(&self, i: usize) -> Result<bool, RowError> {
        Ok(self.uint(i)? != 0)
    }
    pub(super) fn time(&self, i: usize) -> Result<Timestamp, RowError> {
        self.uint(i).map(Timestamp)
    }
    pub(super) fn opt_time(&self, i: usize) -> Result<Option<Timestamp>, RowError> {
        Ok(self.opt_uint(i)?.map(Timestamp))
    }
    pub(super) fn opt_json<T: serde::de::DeserializeOwned>(
        &self,
        i: usize,
    ) -> Result<Option<T>, RowError> {
        self.opt_text(i)?
            .map(|text| {
                serde_json::from_str(&text).map_err(|error| RowError {
                    column: i,
                    reason: format!("unreadable JSON {text:?}: {error}"),
                })
            })
            .transpose()
    }
    pub(super) fn parsed<T>(
        &self,
        i: usize,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, RowError> {
        let text = self.text(i)?;
        parse(&text).ok_or_else(|| RowError {
            column: i,
            reason: format!("unknown value {text:?}"),
        })
    }
}
