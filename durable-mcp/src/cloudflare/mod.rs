//! The Cloudflare Workers host (feature `cloudflare`, built for `wasm32-unknown-unknown`).
//!
//! This first part holds the store: a Durable Object's SQLite storage keeping the same
//! tables as the native host, passing the same store conformance suite (run under workerd by
//! `tests/worker-store`). The TaskRunner Durable Object and the Worker entry build on it.

mod sql_store;

pub use sql_store::DurableObjectStore;
