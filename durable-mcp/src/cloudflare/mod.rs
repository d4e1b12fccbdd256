//! The Cloudflare Workers host (feature `cloudflare`, built for `wasm32-unknown-unknown`).
//!
//! Every task lives in its own Durable Object, the TaskRunner, named by the task id: its
//! SQLite storage holds the task's rows (the same tables as the native host), its one alarm
//! fires the task's next wake-up, and the task body runs inside it. The Worker's fetch handler
//! runs the router and reaches each task's object through `fetch` with a small internal JSON
//! protocol; plain tools and discovery never touch an object.
//!
//! A Worker's glue is three items: the server factory, the object, and the fetch handler.
//!
//! ```ignore
//! use worker::{Context, Env, Request, Response, Result};
//!
//! fn server() -> durable_mcp::McpServer { /* tools and tasks */ }
//!
//! durable_mcp::task_runner!(pub struct TaskRunner => |_env: &Env| server());
//!
//! #[worker::event(fetch)]
//! async fn fetch(request: Request, env: Env, _cx: Context) -> Result<Response> {
//!     durable_mcp::cloudflare::serve(request, &env, server).await
//! }
//! ```
//!
//! [`task_runner!`](crate::task_runner) declares the object; written out, it is a
//! `#[worker::durable_object]` struct wrapping [`TaskRunner`], forwarding `fetch` and `alarm`.
//!
//! # Settings
//!
//! Read from the Worker's variables: `DURABLE_MCP_HAND_OFF` (default 10 minutes, see
//! [`DEFAULT_HAND_OFF`]) and `DURABLE_MCP_LEASE` (default 15 minutes, see [`DEFAULT_LEASE`]),
//! each a duration such as `"30s"` or `"10m"`. `DURABLE_MCP_ALLOWED_HOSTS` names the Worker's
//! own hostnames (see [`ALLOWED_HOSTS_VAR`]): like the native host, the endpoint answers only
//! loopback and the hosts it is told of. With the secret `DURABLE_MCP_ADMIN_TOKEN` set,
//! an operator can wake a task at once (see [`WAKE_PATH`]).

mod client;
mod entry;
mod ports;
mod protocol;
mod runner;
mod settings;
mod sql;
mod sql_store;
mod step_batch;

pub use entry::{
    ADMIN_TOKEN_VAR, ALLOWED_HOSTS_VAR, BODY_LIMIT, MCP_PATH, TASK_RUNNER_BINDING, WAKE_PATH, serve,
};
pub use ports::{AlarmScheduler, JsClock, JsTimer};
pub use runner::TaskRunner;
pub use settings::{DEFAULT_HAND_OFF, DEFAULT_LEASE};
pub use sql_store::DurableObjectStore;

/// Declares a Worker's TaskRunner Durable Object: a `#[worker::durable_object]` struct that
/// wraps [`TaskRunner`] and forwards `fetch` and `alarm` to it. `server` is called with the
/// object's `&worker::Env` and returns the [`McpServer`](crate::McpServer) whose tasks it runs
/// (once per isolate; the same server the fetch handler serves).
///
/// The crate using it depends on `worker` and `wasm-bindgen` (the expansion names both).
///
/// ```ignore
/// durable_mcp::task_runner!(pub struct TaskRunner => |_env| server());
/// ```
#[macro_export]
macro_rules! task_runner {
    ($(#[$meta:meta])* $vis:vis struct $name:ident => $server:expr) => {
        $(#[$meta])*
        #[::worker::durable_object]
        #[derive(Debug)]
        $vis struct $name($crate::cloudflare::TaskRunner);

        impl ::worker::DurableObject for $name {
            fn new(state: ::worker::State, env: ::worker::Env) -> Self {
                let server = $server;
                Self($crate::cloudflare::TaskRunner::new(state, &env, || server(&env)))
            }

            async fn fetch(
                &self,
                request: ::worker::Request,
            ) -> ::worker::Result<::worker::Response> {
                self.0.fetch(request).await
            }

            async fn alarm(&self) -> ::worker::Result<::worker::Response> {
                self.0.alarm().await
            }
        }
    };
}
