//! The native host's pieces (feature `native`). This issue brings the SQLite store; the HTTP
//! server and the timer scheduler build on it.

mod sqlite;

pub use sqlite::{SqliteStore, bind, configure};
