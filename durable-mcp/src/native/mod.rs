//! The embedded native host (feature `native`): MCP over HTTP on tokio and hyper, the SQLite
//! store in one file, a timer scheduler, and recovery of stored tasks at start.
//!
//! Everything runs on one thread (a tokio `LocalSet`), so task bodies need no `Send` bound.

mod clock;
mod limits;
mod scheduler;
mod server;
pub(crate) mod sqlite;

pub use limits::{
    ConnectionLimits, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
};
pub use server::{
    DATABASE_FILE, DEFAULT_BODY_LIMIT, DEFAULT_DATA_DIR, DEFAULT_PORT, HostError, LOCK_FILE,
    Listening, NativeHost,
};
pub use sqlite::SqliteStore;
