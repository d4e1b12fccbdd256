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
//! use worker::{Context, DurableObject, Env, Request, Response, Result, State};
//!
//! fn server() -> durable_mcp::McpServer { /* tools and tasks */ }
//!
//! #[worker::durable_object]
//! pub struct TaskRunner(durable_mcp::cloudflare::TaskRunner);
//!
//! impl DurableObject for TaskRunner {
//!     fn new(state: State, env: Env) -> Self {
//!         Self(durable_mcp::cloudflare::TaskRunner::new(state, &env, server))
//!     }
//!     async fn fetch(&self, request: Request) -> Result<Response> {
//!         self.0.fetch(request).await
//!     }
//!     async fn alarm(&self) -> Result<Response> {
//!         self.0.alarm().await
//!     }
//! }
//!
//! #[worker::event(fetch)]
//! async fn fetch(request: Request, env: Env, _cx: Context) -> Result<Response> {
//!     durable_mcp::cloudflare::serve(request, &env, server).await
//! }
//! ```
//!
//! # Settings
//!
//! Read from the Worker's variables: `DURABLE_MCP_HAND_OFF` (default 10 minutes, see
//! [`DEFAULT_HAND_OFF`]) and `DURABLE_MCP_LEASE` (default 15 minutes, see [`DEFAULT_LEASE`]),
//! each a duration such as `"30s"` or `"10m"`. `DURABLE_MCP_ALLOWED_HOSTS` names the Worker's
//! own hostnames (see [`ALLOWED_HOSTS_VAR`]): like the native host, the endpoint answers only
//! loopback and the hosts it is told of. With the secret `DURABLE_MCP_ADMIN_TOKEN` set,
//! an operator can wake a task at once (see [`WAKE_PATH`]).

mod entry;
mod ports;
mod protocol;
mod runner;
mod settings;
mod sql_store;

pub use entry::{
    ADMIN_TOKEN_VAR, ALLOWED_HOSTS_VAR, BODY_LIMIT, MCP_PATH, TASK_RUNNER_BINDING, WAKE_PATH, serve,
};
pub use ports::{AlarmScheduler, JsClock, JsTimer};
pub use runner::TaskRunner;
pub use settings::{DEFAULT_HAND_OFF, DEFAULT_LEASE};
pub use sql_store::DurableObjectStore;
