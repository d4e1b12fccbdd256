//! The Cloudflare Workers host (feature `cloudflare`, built for `wasm32-unknown-unknown`).
//!
//! Every task lives in its own Durable Object, the TaskRunner, named by the task id: its
//! SQLite storage holds the task's rows (the same tables as the native host), its one alarm
//! fires the task's next wake-up, and the task body runs inside it. The Worker's fetch handler
//! runs the router and reaches each task's object through Durable Object RPC with a small
//! internal JSON protocol; plain tools and discovery never touch an object. `tasks/list` reads the
//! TaskIndex object of the caller's listing scope (one per scope, named by it), which lists
//! the scope's task ids, and asks each listed task's object for its snapshot. A
//! `subscriptions/listen` stream follows a task through a WebSocket to its object, which pushes
//! the task's changes as they commit; the socket uses the hibernation API, so it keeps the
//! object in memory no longer than the task's own work does.
//!
//! A Worker's glue is three items: the server factory, the object, and the fetch handler.
//!
//! ```ignore
//! use worker::Env;
//!
//! fn server() -> durable_mcp::McpServer { /* tools and tasks */ }
//!
//! durable_mcp::cloudflare::task_runner!(pub struct TaskRunner => |_env: &Env| server());
//!
//! durable_mcp::cloudflare::fetch_handler!(server);
//! ```
//!
//! [`fetch_handler!`](fetch_handler) writes the Worker's `fetch` export as a plain
//! function calling [`respond`], which costs the least per request. A Worker that routes
//! other paths itself keeps an `async` handler and calls [`serve`] for the endpoint:
//!
//! ```ignore
//! #[worker::event(fetch)]
//! async fn fetch(request: web_sys::Request, env: Env, _cx: Context) -> Result<Response> {
//!     durable_mcp::cloudflare::serve(request, &env, Endpoint::DEFAULT, server).await
//! }
//! ```
//!
//! `serve` takes the platform's own request type, or worker's `Request` (see
//! [`IncomingRequest`]).
//!
//! [`task_runner!`](task_runner) declares the object, and the `TaskIndex` object
//! beside it (see [`task_index!`](task_index)); written out, each is a
//! `#[worker::durable_object]` struct wrapping [`TaskRunner`] or [`TaskIndex`], with a Durable
//! Object RPC method that forwards the Worker's calls (and, for the TaskRunner, an `alarm` that
//! forwards the alarm, and a `fetch` and the WebSocket handlers for the Worker's watches). wrangler.toml binds them as `TASK_RUNNER` and
//! `TASK_INDEX`.
//!
//! # Settings
//!
//! Read from the Worker's variables and secrets, as [`crate::settings`] lists them:
//! `DURABLE_MCP_HAND_OFF` (default 10 minutes, see [`DEFAULT_HAND_OFF`]) and
//! `DURABLE_MCP_LEASE` (default 15 minutes, see [`DEFAULT_RUNNER_LEASE`]), each a duration
//! such as `"30s"` or `"10m"`. Like the native host, the endpoint answers only loopback and the
//! hosts it is told of, and here also every name under `workers.dev`, so that a deployed
//! Worker answers on its own name without settings;
//! [`ALLOWED_HOSTS_VAR`](crate::settings::ALLOWED_HOSTS_VAR) names its custom domains. With
//! the secret [`INSPECTOR_TOKEN_VAR`](crate::settings::INSPECTOR_TOKEN_VAR) set, an operator
//! can wake a task at once (see [`WAKE_PATH`]) and use the task inspector (see
//! [`Endpoint::inspector_path`]). A setting that is set but unusable makes the Worker answer
//! every request to the endpoint's paths with HTTP 500 and a message naming it.
//!
//! # Logs
//!
//! The engine's `tracing` events (and the Worker's own) go to the console as objects, one per
//! event, with the console method of its level; the variable `RUST_LOG` ([`LOG_FILTER_VAR`](crate::settings::LOG_FILTER_VAR))
//! filters them, `warn` unless set (the per-task `info` events cost a console write each; set
//! `RUST_LOG=info` for them). With `DURABLE_MCP_LOG_FORMAT=json`
//! ([`LOG_FORMAT_VAR`](crate::settings::LOG_FORMAT_VAR)) each is written as one line of JSON
//! text instead, which `wrangler dev` prints on one line. A Worker that installs a `tracing`
//! subscriber of its own before its first request keeps it.

mod client;
mod driven;
mod entry;
mod index;
#[cfg(task_listing)]
mod listing;
#[cfg(feature = "logging")]
mod logging;
mod object_rpc;
#[cfg(feature = "oauth")]
mod outbound;
mod ports;
mod protocol;
mod runner;
mod settings;
mod sql;
pub(crate) mod sql_store;
mod step_batch;
mod watch;

#[allow(unused_imports, reason = "read by the listen layer")]
pub(crate) use client::MAX_WATCHED_TASKS_PER_STREAM;
pub use client::ObjectTasks;
pub use entry::{
    BODY_LIMIT, Bindings, Endpoint, IncomingRequest, MCP_PATH, TASK_INDEX_BINDING,
    TASK_RUNNER_BINDING, WAKE_PATH, respond, serve,
};
pub use index::TaskIndex;
pub use runner::TaskRunner;
pub use settings::{DEFAULT_HAND_OFF, DEFAULT_RUNNER_LEASE};

// The declaration macros live under the host they declare for. `#[macro_export]` puts a macro
// at the crate root; the root names are hidden, and these re-exports are the ones to use.
#[doc(inline)]
pub use crate::__fetch_handler as fetch_handler;
#[doc(inline)]
pub use crate::__task_index as task_index;
#[doc(inline)]
pub use crate::__task_runner as task_runner;

/// Declares a Worker's TaskRunner Durable Object: a `#[worker::durable_object]` struct that
/// wraps [`TaskRunner`] and forwards the Worker's calls (Durable Object RPC), `fetch` (the
/// Worker's watches of a task), `alarm`, and the hibernation API's WebSocket events to it.
/// `server` is called with the object's `&worker::Env` and returns the
/// [`McpServer`](crate::McpServer) whose tasks it runs (once per isolate for each class; the
/// same server the fetch handler serves).
///
/// It also declares the listing index, `TaskIndex`, with the same visibility (as
/// [`task_index!`](task_index) does), which wrangler.toml binds as
/// [`TASK_INDEX`](crate::cloudflare::TASK_INDEX_BINDING). To name the index class otherwise,
/// write `; index = Name` after the server.
///
/// A Worker that serves two servers declares a runner class for each, with an index class
/// each, and names the [`Bindings`] of each after the index (the same value its
/// [`Endpoint`] names in [`serve`]): `; index = Name; bindings = BINDINGS`. Each class
/// builds its task registry from its own `server`.
///
/// The crate using it depends on `worker` and `wasm-bindgen` (the expansion names both).
///
/// ```ignore
/// durable_mcp::cloudflare::task_runner!(pub struct TaskRunner => |_env| server());
/// durable_mcp::cloudflare::task_runner!(pub struct Tasks => |_env| server(); index = TaskLists);
///
/// const BINDINGS_A: Bindings = Bindings::new("RUNNER_A", "INDEX_A");
/// durable_mcp::cloudflare::task_runner!(
///     pub struct RunnerA => |_env| server_a(); index = IndexA; bindings = BINDINGS_A
/// );
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __task_runner {
    ($(#[$meta:meta])* $vis:vis struct $name:ident => $server:expr) => {
        $crate::__task_runner!($(#[$meta])* $vis struct $name => $server; index = TaskIndex);
    };
    (
        $(#[$meta:meta])* $vis:vis struct $name:ident => $server:expr; index = $index:ident
    ) => {
        $crate::__task_runner!(
            $(#[$meta])* $vis struct $name => $server;
            index = $index;
            bindings = $crate::cloudflare::Bindings::DEFAULT
        );
    };
    (
        $(#[$meta:meta])* $vis:vis struct $name:ident => $server:expr;
        index = $index:ident;
        bindings = $bindings:expr
    ) => {
        $crate::__task_index!(
            /// The listing index of one scope of tasks (see `task_runner!`).
            $vis struct $index
        );

        $(#[$meta])*
        #[::worker::durable_object(alarm)]
        #[derive(Debug)]
        $vis struct $name($crate::cloudflare::TaskRunner);

        $crate::__object_rpc_method!($name);
        $crate::__watch_socket_handlers!($name);

        impl ::worker::DurableObject for $name {
            fn new(state: ::worker::State, env: ::worker::Env) -> Self {
                let server = $server;
                Self($crate::cloudflare::TaskRunner::for_class(
                    state,
                    &env,
                    ::core::stringify!($name),
                    $bindings,
                    || server(&env),
                ))
            }

            async fn fetch(
                &self,
                request: ::worker::Request,
            ) -> ::worker::Result<::worker::Response> {
                self.0.fetch(request)
            }

            async fn alarm(&self) -> ::worker::Result<::worker::Response> {
                self.0.alarm().await
            }
        }
    };
}

/// Declares a Worker's TaskIndex Durable Object: a `#[worker::durable_object]` struct that
/// wraps [`TaskIndex`](crate::cloudflare::TaskIndex) and forwards the calls of the Worker and
/// of TaskRunners (Durable Object RPC) to it.
/// [`task_runner!`](task_runner) invokes it; call it yourself only for a TaskRunner
/// declared without that macro.
///
/// ```ignore
/// durable_mcp::cloudflare::task_index!(pub struct TaskIndex);
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __task_index {
    ($(#[$meta:meta])* $vis:vis struct $name:ident) => {
        $(#[$meta])*
        #[::worker::durable_object(fetch)]
        #[derive(Debug)]
        $vis struct $name($crate::cloudflare::TaskIndex);

        $crate::__object_rpc_method!($name);

        impl ::worker::DurableObject for $name {
            fn new(state: ::worker::State, _env: ::worker::Env) -> Self {
                Self($crate::cloudflare::TaskIndex::new(state))
            }

            async fn fetch(
                &self,
                request: ::worker::Request,
            ) -> ::worker::Result<::worker::Response> {
                self.0.fetch(request)
            }
        }
    };
}

/// Writes the Worker's fetch handler: the `fetch` export, a plain function that answers every
/// request with [`respond`] at the [`Endpoint`] given after the server (by default
/// [`Endpoint::DEFAULT`]: the MCP endpoint at [`MCP_PATH`], tasks in the objects bound as
/// `TASK_RUNNER` and `TASK_INDEX`). `server` is the function that builds the [`McpServer`](crate::McpServer), once
/// per isolate. It replaces a `#[worker::event(fetch)]` handler, and answers at less cost (see
/// [`respond`]); a Worker that routes other paths itself keeps its handler and calls
/// [`serve`].
///
/// The crate using it depends on `worker` and `wasm-bindgen` (the expansion names both).
///
/// ```ignore
/// durable_mcp::cloudflare::fetch_handler!(server);
/// durable_mcp::cloudflare::fetch_handler!(server; endpoint = Endpoint::new("/a/mcp", BINDINGS_A));
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __fetch_handler {
    ($server:expr) => {
        $crate::__fetch_handler!($server; endpoint = $crate::cloudflare::Endpoint::DEFAULT);
    };
    ($server:expr; endpoint = $endpoint:expr) => {
        const _: () = {
            use ::worker::wasm_bindgen::prelude::wasm_bindgen;

            /// The Worker's fetch handler (see `durable_mcp::cloudflare::fetch_handler!`).
            #[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen, js_name = fetch)]
            pub fn durable_mcp_fetch(
                request: ::worker::web_sys::Request,
                env: ::worker::Env,
                _context: ::worker::wasm_bindgen::JsValue,
            ) -> ::worker::js_sys::Promise {
                $crate::cloudflare::respond(request, env, $endpoint, $server)
            }
        };
    };
}

/// Gives a durable-mcp object class (`struct $name(inner)`, `inner` a
/// [`TaskRunner`] or [`TaskIndex`]) the Durable Object RPC method the Worker calls,
/// `durableMcpCall`, forwarding it to `inner.call`. [`task_runner!`](task_runner) and
/// [`task_index!`](task_index) invoke it.
#[doc(hidden)]
#[macro_export]
macro_rules! __object_rpc_method {
    ($name:ident) => {
        const _: () = {
            use ::worker::wasm_bindgen::prelude::wasm_bindgen;

            #[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen)]
            impl $name {
                /// One internal call from the Worker, as JSON text; the reply's JSON text, or a
                /// promise of it.
                #[wasm_bindgen(js_name = durableMcpCall)]
                pub fn durable_mcp_call(
                    &self,
                    call: ::std::string::String,
                ) -> ::std::result::Result<
                    ::worker::wasm_bindgen::JsValue,
                    ::worker::wasm_bindgen::JsValue,
                > {
                    self.0.call(call)
                }
            }
        };
    };
}
