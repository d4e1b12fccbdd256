//! The embedded native host (feature `native`): MCP over HTTP on tokio and hyper, the SQLite
//! store in one file, a timer scheduler, and recovery of stored tasks at start.
//!
//! Each worker thread is a single-threaded runtime (a tokio `LocalSet`), so task bodies need no
//! `Send` bound; see [`NativeHost`]'s threads.
//!
//! The host serves in one of two ways: on a listener of its own ([`NativeHost::run`], or
//! [`NativeHost::bind`] for a program that runs its own tokio runtime), or, with the `tower`
//! feature, mounted in the application's own server ([`NativeHost::mount`]: its endpoint is a
//! tower `Service` for an axum `Router`, behind the application's middleware, on its runtime;
//! `examples/axum-app` is such a service).

mod activations;
mod body;
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
pub use endpoint::{Authenticated, Endpoint};
pub use server::{HostError, Listening, NativeHost};
pub use sqlite::SqliteStore;
