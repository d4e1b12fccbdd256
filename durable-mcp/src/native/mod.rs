//! The embedded native host (feature `native`): MCP over HTTP on tokio and hyper, the SQLite
//! store in one file, a timer scheduler, and recovery of stored tasks at start.
//!
//! Each worker thread is a single-threaded runtime (a tokio `LocalSet`), so task bodies need no
//! `Send` bound; see [`NativeHost`]'s threads.

mod activations;
mod clock;
#[cfg(feature = "tower")]
mod endpoint;
mod exchange;
mod http;
mod limits;
#[cfg(feature = "logging")]
pub(crate) mod logging;
#[cfg(feature = "oauth")]
mod outbound;
mod owners;
mod pool;
mod server;
pub(crate) mod sqlite;
mod worker;

#[cfg(feature = "tower")]
pub use endpoint::{Authenticated, Endpoint, EndpointBody, Mounted};
pub use limits::ConnectionLimits;
pub use server::{HostError, Listening, NativeHost};
pub use sqlite::SqliteStore;
