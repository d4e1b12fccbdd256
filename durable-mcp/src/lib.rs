//! durable-mcp: MCP servers whose long-running tools are durable tasks.
//!
//! A task body is an `async fn` that runs against a [`TaskContext`]: every
//! [`step`](TaskContext::step) it takes is journaled in SQLite and never re-run once recorded,
//! [`sleep`](TaskContext::sleep)s survive restarts, [`elicit`](TaskContext::elicit) parks the
//! task until a client answers, and a cancelled task stops at its next step boundary.
//!
//! The crate is layered; dependencies point down:
//!
//! - [`core`]: the pure engine (records, journal, scheduling, retries, limits, errors).
//! - [`wire`]: the MCP 2026-07-28 wire types, with the Tasks extension.
//! - [`rpc`]: the MCP router, a pure dispatcher over the engine, and the [`McpServer`]
//!   builder.
//! - [`runtime`]: the async step API, the activation driver and the [`Engine`]'s control
//!   surface, over ports that hosts implement ([`runtime::Store`], [`runtime::Clock`],
//!   [`runtime::Timer`], [`runtime::Scheduler`]).
//! - `native` (feature `native`): the SQLite store on rusqlite.
//! - `testing` (feature `testing`): a virtual clock, an in-memory store, a harness that drives
//!   tasks on virtual time, and the store conformance suite.
//!
//! ```
//! # #[cfg(feature = "testing")] {
//! use durable_mcp::testing::Harness;
//! use durable_mcp::{TaskContext, TaskError, TaskRegistry, TaskDefinition};
//! use serde_json::{json, Value};
//!
//! async fn greet(cx: &TaskContext, input: Value) -> Result<Value, TaskError> {
//!     let name: String = cx.step("lookup", || async move {
//!         Ok(input["name"].as_str().unwrap_or("world").to_owned())
//!     }).await?;
//!     cx.sleep("pause", "1m").await?;
//!     Ok(json!({ "content": [{ "type": "text", "text": format!("hello {name}") }] }))
//! }
//!
//! let registry = TaskRegistry::new().register(TaskDefinition::new("greet", |cx, input| {
//!     Box::pin(greet(cx, input))
//! }));
//! let mut harness = Harness::new(registry);
//! let id = harness.create("greet", json!({ "name": "Ada" }));
//! harness.run_until_idle();
//! harness.advance("1m");
//! assert_eq!(harness.result(&id).unwrap()["content"][0]["text"], "hello Ada");
//! # }
//! ```

pub mod core;
pub mod rpc;
pub mod runtime;
pub mod wire;

#[cfg(feature = "native")]
pub mod native;

#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __private;

#[cfg(feature = "testing")]
pub mod testing;

pub use durable_mcp_macros::{mcp_task, step};
pub use rpc::{McpServer, Router, TaskTool, ToolCall, ToolOutcome};
pub use runtime::{
    ElicitOutcome, Engine, StepError, StepFailureKind, TaskContext, TaskDefinition, TaskError,
    TaskRegistry,
};
