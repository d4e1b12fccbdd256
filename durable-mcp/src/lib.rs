//! durable-mcp: MCP servers whose long-running tools are durable tasks.
//!
//! A task body is an `async fn` that runs against a [`TaskContext`]: every
//! [`step`](TaskContext::step) it takes is journaled in SQLite and never re-run once recorded,
//! [`sleep`](TaskContext::sleep)s survive restarts, [`elicit`](TaskContext::elicit) parks the
//! task until a client answers, and a cancelled task stops at its next step boundary.
//!
//! # Who finds what where
//!
//! - **Task authors** find everything at the crate root: the [`mcp_task`] and [`step`] macros,
//!   [`duration!`] for duration literals checked at compile time, [`McpServer`] to register
//!   tasks, tools, prompts and resources, [`TaskContext`] for the body, the errors ([`TaskError`], [`StepError`]) and the values they name ([`TaskStatus`],
//!   [`RetryPolicy`], [`Backoff`], [`Timestamp`], durations). [`wire`] holds the MCP values
//!   handlers return (tool results, content, prompts, resources, completions), and
//!   `testing` (feature `testing`) the harness that runs tasks on virtual time.
//! - **Host authors** deploy with one of the two hosts: `native` (feature `native`: the
//!   embedded host, one process and one SQLite file) or `cloudflare` (feature `cloudflare`,
//!   wasm32: a Worker with one Durable Object per task), each with its settings. [`http`]
//!   is the endpoint as a function ([`Router`](http::Router) over an
//!   [`Engine`](http::Engine)), to test it in process or to serve it from a host of one's own.
//! - **Store authors** implement [`store::Store`] and run the store conformance suite,
//!   `testing::store_conformance`, against it.
//!
//! # Features
//!
//! A host is a feature: `native` or `cloudflare` (`testing` adds the harness); `tower` adds to
//! the native host its endpoint as a tower `Service`, to mount in an application's own server
//! (an axum `Router`: `native::NativeHost::mount`). Four more are on
//! by default, what a server deployed for others needs: `oauth` (MCP authorization, the `auth`
//! module), `logging` (the hosts' log output), `inspector` (the task inspector and a Worker's
//! wake path) and `mcp-2025` (the clients of the 2025 revisions: `initialize`, sessions,
//! 2025-11-25 tasks and their `tasks/list`). A server that uses none of them leaves them out
//! with `default-features = false`, for a smaller Worker script; a host whose settings ask for
//! what its build left out refuses to start, naming the setting and the feature, and a server
//! without `mcp-2025` answers a 2025 request with 2025's "Unsupported protocol version" error.
//!
//! Everything else is the engine's own; `__private` (what the macros expand to) and
//! `__internals` (what the workspace's benchmarks, simulator and tests reach into) are hidden
//! and are no API: they change in any release.
//!
//! ```
//! # #[cfg(feature = "testing")] {
//! use durable_mcp::testing::Harness;
//! use durable_mcp::{McpServer, StepError, TaskContext, TaskError, duration, mcp_task, step};
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! /// Greets someone, after a durable pause.
//! #[mcp_task]
//! async fn greet(cx: &TaskContext, input: Greet) -> Result<String, TaskError> {
//!     let name = spell(&input.name).await?;
//!     cx.sleep("pause", duration!("1m")).await?;
//!     Ok(format!("hello {name}"))
//! }
//!
//! /// Journaled: it runs once, however often the task replays.
//! #[step]
//! async fn spell(name: &str) -> Result<String, StepError> {
//!     Ok(name.trim().to_owned())
//! }
//!
//! let server = McpServer::new("greeter", "1.0.0").task(greet);
//! let mut harness = Harness::new(&server);
//! let id = harness.create("greet", json!({ "name": "Ada" }));
//! harness.run_until_idle();
//! harness.advance("1m");
//! assert_eq!(harness.result(&id).unwrap()["content"][0]["text"], "hello Ada");
//! # }
//! ```
//!
//! Serve the same `server` natively with `native::NativeHost`, or from a Worker with the
//! `cloudflare` module; `docs/getting-started.md` walks through both.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod apart;
#[cfg(feature = "oauth")]
pub mod auth;
mod core;
#[cfg(all(any_host, feature = "inspector"))]
mod inspector;
#[cfg(any(test, all(cloudflare_host, feature = "logging")))]
mod log_filter;
mod rpc;
mod runtime;

pub mod http;
pub mod settings;
pub mod store;
pub mod wire;

#[cfg(native_host)]
pub mod native;

#[cfg(cloudflare_host)]
pub mod cloudflare;

#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __private;

#[doc(hidden)]
#[path = "internals.rs"]
pub mod __internals;

#[cfg(feature = "testing")]
pub mod testing;

/// Turns an `async fn` into a durable MCP task tool.
///
/// ```text
/// #[mcp_task(option = value, ..)]
/// async fn name(cx: &TaskContext, input: Input) -> Result<R, E> { .. }
/// async fn name(input: Input) -> Result<R, E> { .. }   // a body that needs no context
/// ```
///
/// The fn becomes `fn name() -> TaskTool`, with the same visibility and doc comment: register it
/// with [`McpServer::task`]`(name)`, or call `name()` to adjust the [`TaskTool`] first. Each
/// `tools/call` of the tool creates a task whose body is the fn; the body is re-run from the top
/// on every activation, and its steps and sleeps replay from the journal.
///
/// - `Input` derives `serde::Deserialize` and `schemars::JsonSchema`: its schema (doc comments
///   included) is the tool's `inputSchema`, and arguments that do not deserialise into it are
///   answered with a tool error naming the problem, before any task is created.
/// - `R` is the tool result: a [`CallToolResult`](wire::CallToolResult), a `String`, or
///   [`Json`](wire::Json)`(value)` for structured content. A `Json<T>` whose `T` derives
///   `schemars::JsonSchema` and is a struct with named fields (an object, as MCP requires)
///   gives the tool an `outputSchema` derived from `T`, built when the tool is first listed;
///   any other `T` (without `JsonSchema`, or a list) gives none.
/// - `E` converts into [`TaskError`] (any `std::error::Error` does): the task then completes
///   with a tool error, or fails for [`TaskError::Protocol`].
///
/// # Options
///
/// Durations are strings checked at compile time: a number followed by `ms`, `s`, `m`, `h` or
/// `d` (`"250ms"`, `"1.5s"`, `"5m"`), or plain milliseconds (`"1500"`).
///
/// | option | value | default | meaning |
/// |---|---|---|---|
/// | `name` | string, not empty, no `#` | the fn's name | the tool's name |
/// | `title` | string | none | the display title |
/// | `description` | string | the doc comment | what the model reads about the tool |
/// | `ttl` | duration, or `"forever"` | `"24h"` | how long a task is kept from its creation; a task still live then fails |
/// | `poll_interval` | duration | `"5s"` | the poll interval suggested to clients |
/// | `retry(..)` | see below | see below | the retry policy of the task's steps, unless a step sets its own |
/// | `step_timeout` | duration | `"5m"` | how long **one attempt of a step** may take, unless the step sets its own; it does not limit the task |
/// | `cleanup_timeout` | duration | `"5m"` | how long the compensations registered with [`TaskContext::on_cancel`] may take, retries included, once a cancel stopped the body |
/// | `optional` | flag | set | a client that did not declare the Tasks extension may call the tool: the task runs and the call waits for its result, asking its input as input rounds of the call ([`TaskTool::optional`]) |
/// | `required` | flag | not set | such a client gets error -32021 instead ([`TaskTool::required`]) |
/// | `annotations(..)` | `read_only`, `destructive`, `idempotent`, `open_world` = bool (a bare name is `true`) | none | the tool's `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint` |
/// | `scopes` | `["scope", ..]` | none | OAuth scopes a call of the tool, and every `tasks/*` request about its tasks, needs when the server checks tokens (see [`TaskTool::scopes`]) |
/// | `crate` | path | `::durable_mcp` | where durable-mcp is, for a crate that re-exports it |
///
/// `retry` and `step_timeout` are named as in [`TaskDefinition::retry`] and
/// [`TaskDefinition::step_timeout`]; their old spellings `retries(..)` and `timeout` are refused
/// with an error that gives the new name.
///
/// `retry(limit = 5, delay = "1s", backoff = "exponential", max_delay = "5m", jitter = true)`
/// (these are the defaults; a field left out keeps its default):
///
/// | field | value | default | meaning |
/// |---|---|---|---|
/// | `limit` | integer ≥ 1 | `5` | attempts in all, the first included (`1` never retries) |
/// | `delay` | duration | `"1s"` | the delay after the first failed attempt |
/// | `backoff` | `"constant"`, `"linear"`, `"exponential"` | `"exponential"` | the delay after failed attempt *n*: `delay`, `delay·n` or `delay·2^(n-1)` |
/// | `max_delay` | duration, ≥ `delay` | `"5m"` | the longest delay |
/// | `jitter` | bool | `true` | spreads each delay over `[d/2, d]`, the same on every replay |
///
/// # Example
///
/// A task with a step, registered on a server and run on virtual time by
/// `durable_mcp::testing::Harness` (feature `testing`):
///
/// ```
/// # #[cfg(feature = "testing")] {
/// use durable_mcp::testing::Harness;
/// use durable_mcp::wire::Json;
/// use durable_mcp::{McpServer, StepError, TaskContext, TaskError, duration, mcp_task, step};
/// use serde::{Deserialize, Serialize};
/// use serde_json::json;
///
/// /// What to summarise.
/// #[derive(Deserialize, schemars::JsonSchema)]
/// struct Request {
///     /// The report's name.
///     report: String,
/// }
///
/// /// The tool's structured result.
/// #[derive(Serialize)]
/// struct Summary {
///     report: String,
///     rows: u32,
/// }
///
/// /// Counts a report's rows: journaled, so it runs once however often the task replays.
/// #[step(retry(limit = 3, delay = "1s"))]
/// async fn count_rows(report: &str) -> Result<u32, StepError> {
///     Ok(u32::try_from(report.len())?)
/// }
///
/// /// Summarises a report after a cool-off period.
/// #[mcp_task(ttl = "1h", poll_interval = "2s", annotations(read_only = true))]
/// async fn summarise(cx: &TaskContext, input: Request) -> Result<Json<Summary>, TaskError> {
///     let rows = count_rows(&input.report).await?;
///     cx.sleep("cool-off", duration!("30s")).await?;
///     Ok(Json(Summary { report: input.report, rows }))
/// }
///
/// let server = McpServer::new("reports", "1.0.0").task(summarise);
/// let mut harness = Harness::new(&server);
/// let id = harness.create("summarise", json!({ "report": "Q3" }));
/// harness.run_until_idle(); // the step ran, the task sleeps
/// harness.advance("30s"); // it wakes, replays the step from the journal and completes
/// let result = harness.result(&id).unwrap();
/// assert_eq!(result["structuredContent"], json!({ "report": "Q3", "rows": 2 }));
/// # }
/// ```
///
/// # Mistakes caught at compile time
///
/// The fn must be `async` (and not generic, not a method); the error names the expected shape:
///
/// ```compile_fail
/// use durable_mcp::{TaskError, mcp_task};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Input {
///     n: u64,
/// }
///
/// #[mcp_task]
/// fn double(input: Input) -> Result<String, TaskError> {
///     // error: #[mcp_task] needs an `async fn`: write `async fn name(cx: &TaskContext, ...`
///     Ok((input.n * 2).to_string())
/// }
/// ```
///
/// The input type must describe itself as a JSON Schema:
///
/// ```compile_fail
/// use durable_mcp::{TaskError, mcp_task};
///
/// #[derive(serde::Deserialize)] // error: ... must implement JsonSchema and Deserialize
/// struct Input {
///     n: u64,
/// }
///
/// #[mcp_task]
/// async fn double(input: Input) -> Result<String, TaskError> {
///     Ok((input.n * 2).to_string())
/// }
/// ```
///
/// Malformed options (an unknown option, a bad duration, `limit = 0`, `max_delay` shorter
/// than `delay`, `required` with `optional`) are errors on the offending option or literal.
#[doc(inline)]
pub use durable_mcp_macros::mcp_task;

/// Turns an `async fn` into a plain MCP tool: one that answers each call at once.
///
/// ```text
/// #[tool(option = value, ..)]
/// async fn name(input: Input) -> Result<R, E> { .. }
/// async fn name(call: &ToolCall, input: Input) -> Result<R, E> { .. }   // with the request
/// async fn name() -> R { .. }                                          // no arguments, infallible
/// ```
///
/// The fn becomes `fn name() -> PlainTool`, with the same visibility and doc comment: register
/// it with [`McpServer::tool`]`(name)`. It is the counterpart of [`mcp_task`] for work that
/// fits in one request: nothing is journaled, and every client can call it, in both protocol
/// eras and on both hosts.
///
/// - `Input` derives `serde::Deserialize` and `schemars::JsonSchema`, and is a struct with
///   named fields: its schema (doc comments included) is the tool's `inputSchema`. Arguments
///   that do not deserialise into it are answered with a tool error naming the field, and the
///   fn does not run. A fn without an input takes any object.
/// - `call: &`[`ToolCall`] is the request: who is calling ([`principal`](Request::principal)),
///   the client's capabilities, a [`Notifier`] for log messages and progress, and the answers
///   to the input the tool asked for ([`input_response`](Request::input_response)).
/// - `R` is the result: a `String` (one text block), a [`CallToolResult`](wire::CallToolResult)
///   (any content blocks), [`Json`](wire::Json)`(value)`, or a [`ToolOutcome`] (the result, or
///   an [`InputRequiredResult`](wire::InputRequiredResult) asking the client for input first;
///   the call comes back with the answers). `Json<T>` sends `T` as `structuredContent` with
///   its JSON text as the content beside it, for clients that read only content, and gives
///   the tool an `outputSchema` derived from `T` (which derives `serde::Serialize` and
///   `schemars::JsonSchema`, and is a struct with named fields).
/// - `E` implements `Display` (`String`, `anyhow::Error`, any error type): an `Err` answers a
///   tool error (`isError: true`) with its message, which the model reads and may act on.
///
/// # Options
///
/// | option | value | default | meaning |
/// |---|---|---|---|
/// | `name` | string, not empty, no `#` | the fn's name | the tool's name |
/// | `title` | string | none | the display title |
/// | `description` | string | the doc comment | what the model reads about the tool |
/// | `annotations(..)` | `read_only`, `destructive`, `idempotent`, `open_world` = bool (a bare name is `true`) | none | the tool's `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint` |
/// | `scopes` | `["scope", ..]` | none | OAuth scopes a call of the tool needs when the server checks tokens (see [`PlainTool::scopes`]) |
/// | `crate` | path | `::durable_mcp` | where durable-mcp is, for a crate that re-exports it |
///
/// # Example
///
/// ```
/// use durable_mcp::wire::Json;
/// use durable_mcp::{McpServer, tool};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// Two numbers.
/// #[derive(Deserialize, JsonSchema)]
/// struct Pair {
///     /// The first number.
///     a: i64,
///     /// The second number.
///     b: i64,
/// }
///
/// /// Their sum.
/// #[derive(Serialize, JsonSchema)]
/// struct Sum {
///     sum: i64,
/// }
///
/// /// Adds two numbers.
/// #[tool(annotations(read_only, idempotent))]
/// async fn add(input: Pair) -> Result<Json<Sum>, String> {
///     let sum = input.a.checked_add(input.b).ok_or("the sum overflows")?;
///     Ok(Json(Sum { sum }))
/// }
///
/// let server = McpServer::new("calculator", "1.0.0").tool(add);
/// assert_eq!(server.tool_names(), ["add"]);
/// let tool = add();
/// assert_eq!(tool.tool().output_schema.as_ref().unwrap()["type"], "object");
/// ```
///
/// Malformed options and signatures are errors on the offending option or parameter; a type
/// that does not fit (an input without `JsonSchema`, a result that is not one) is reported
/// where it is written.
#[doc(inline)]
pub use durable_mcp_macros::tool;

pub use crate::core::retry::RetryPolicyError;
pub use crate::core::{
    Backoff, DurationError, MAX_DURATION, RetryPolicy, TaskStatus, Timestamp, format_duration,
    parse_duration,
};
/// A duration literal checked at compile time: `duration!("5m")` is
/// `Duration::from_millis(300_000)`, and a malformed literal is a compile error on it.
///
/// ```text
/// duration!("250ms")   duration!("1.5s")   duration!("5m")   duration!("2d")   duration!("1500")
/// ```
///
/// The grammar is durable-mcp's one duration grammar, that of the macros' options and of
/// [`parse_duration`]: a number followed by `ms`, `s`, `m`, `h` or `d`, or plain milliseconds;
/// fractions round to the nearest millisecond, and nothing longer than [`MAX_DURATION`]
/// (`"100000000d"`). The expansion names only `core`, so it works in a `const` and in crates
/// that reach durable-mcp through a re-export.
///
/// Write it wherever a duration is a literal: [`TaskContext::sleep`],
/// [`Elicit::timeout`] and the test harness take any [`IntoDelay`], which a
/// `&str` is too, but a `&str` is only parsed when the task runs, so a typo in it fails the
/// task rather than the build. Keep the `&str` form for text read at run time (a setting, a
/// request).
///
/// ```
/// # #[cfg(feature = "testing")] {
/// use std::time::Duration;
///
/// use durable_mcp::testing::Harness;
/// use durable_mcp::{McpServer, TaskContext, TaskError, duration, mcp_task};
/// use serde_json::json;
///
/// const COOL_OFF: Duration = duration!("30s");
/// assert_eq!(COOL_OFF, Duration::from_secs(30));
/// assert_eq!(duration!("1.5s"), Duration::from_millis(1500));
///
/// /// Whom to remind.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Input {
///     name: String,
/// }
///
/// /// Reminds someone after a pause.
/// #[mcp_task]
/// async fn remind(cx: &TaskContext, input: Input) -> Result<String, TaskError> {
///     cx.sleep("pause", duration!("5m")).await?;
///     cx.sleep("cool-off", COOL_OFF).await?;
///     Ok(format!("reminded {}", input.name))
/// }
///
/// let server = McpServer::new("reminders", "1.0.0").task(remind);
/// let mut harness = Harness::new(&server);
/// let id = harness.create("remind", json!({ "name": "Ada" }));
/// harness.advance(duration!("5m"));
/// harness.advance(COOL_OFF);
/// assert_eq!(harness.result(&id).unwrap()["content"][0]["text"], "reminded Ada");
/// # }
/// ```
///
/// # Mistakes caught at compile time
///
/// A literal outside the grammar is refused where it is written, with the forms it accepts:
///
/// ```compile_fail
/// use durable_mcp::duration;
///
/// // error: invalid duration "5 minutes": the unit is not one of ms, s, m, h, d; write a
/// // number followed by ms, s, m, h or d ("250ms", "30s", "5m", "1h", "2d") or plain
/// // milliseconds ("1500")
/// let pause = duration!("5 minutes");
/// ```
///
/// It takes a string literal only; a string known at run time goes to [`parse_duration`], or
/// as a `&str` wherever an [`IntoDelay`] is taken:
///
/// ```compile_fail
/// use durable_mcp::duration;
///
/// let text = String::from("5m");
/// let pause = duration!(text); // error: duration! takes one string literal, ...
/// ```
#[doc(inline)]
pub use durable_mcp_macros::duration;
/// Turns an `async fn` into a journaled step, callable from any task body.
///
/// ```text
/// #[step(option = value, ..)]
/// async fn name(param: Type, ..) -> Result<T, StepError> { .. }
/// ```
///
/// The fn keeps its name, parameters and output. With owned parameters it becomes a plain fn
/// that returns a (boxed) future and claims the step's journal key when it is called, so that
/// steps created together (`try_join_all(ids.map(fetch))`) get their keys in call order; with
/// borrowed parameters it stays an `async fn` and claims when first polled. Called while a
/// task's body runs (in the body itself or in any fn it awaits), it is a
/// [`TaskContext::step`] of that task: keyed by its name (`name`, `name#2`, ... for repeated
/// calls in one run), run once and its value recorded; on replay the recorded value comes back
/// without running the body. Inside another step's closure it simply runs, as part of that
/// step. A failed attempt is retried after a
/// durable backoff under the step's policy; once the step fails for good (its attempts spent,
/// or a [`StepError::non_retryable`]), the returned `StepError` turns back into
/// [`TaskError::StepFailed`] with `?`. Called outside a task (a test, a spawned future), the
/// body simply runs once, with no journal, retry or timeout.
///
/// - `T` is journaled as JSON: it implements `serde::Serialize` and `serde::Deserialize`.
/// - Parameters are plain names (`to: &str`, `mut n: u32`), not patterns. Arguments are
///   captured when the step is called; on replay they are not looked at.
/// - Inside the body, `?` turns any error into a retryable [`StepError`].
///
/// # Options
///
/// | option | value | default | meaning |
/// |---|---|---|---|
/// | `name` | string, not empty, no `#` | the fn's name | the step's journal key (renaming a step makes live tasks that already ran it run it again) |
/// | `retry(..)` | as for [`mcp_task`] | the task's policy | the retry policy of this step; a field left out takes its value from [`RetryPolicy::DEFAULT`](core::RetryPolicy::DEFAULT), not from the task |
/// | `timeout` | duration | the task's `step_timeout` (`"5m"`) | how long one attempt may take; an attempt that outlasts it failed |
/// | `crate` | path | `::durable_mcp` | where durable-mcp is, for a crate that re-exports it |
///
/// The options are named as [`Step::retry`] and [`Step::timeout`]; the old spelling
/// `retries(..)` is refused with an error that gives the new name, `retry(..)`.
///
/// # Example
///
/// A step that fails twice, retried on the virtual clock of `durable_mcp::testing::Harness`:
///
/// ```
/// # #[cfg(feature = "testing")] {
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// use durable_mcp::TaskStatus;
/// use durable_mcp::testing::Harness;
/// use durable_mcp::{McpServer, StepError, TaskError, mcp_task, step};
/// use serde_json::json;
///
/// static CALLS: AtomicU32 = AtomicU32::new(0);
///
/// /// Asks a flaky service for a price: fails twice, then answers.
/// #[step(
///     name = "price",
///     retry(limit = 5, delay = "2s", backoff = "constant", jitter = false),
///     timeout = "10s"
/// )]
/// async fn fetch_price(symbol: &str) -> Result<f64, StepError> {
///     if symbol.is_empty() {
///         return Err(StepError::non_retryable("no symbol: no attempt can fix that"));
///     }
///     let call = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
///     if call < 3 {
///         return Err(StepError::retryable(format!("call {call}: service unavailable")));
///     }
///     Ok(101.5)
/// }
///
/// /// Which symbol to quote.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Input {
///     symbol: String,
/// }
///
/// /// Quotes a symbol.
/// #[mcp_task]
/// async fn quote(input: Input) -> Result<String, TaskError> {
///     let price = fetch_price(&input.symbol).await?;
///     Ok(format!("{}: {price}", input.symbol))
/// }
///
/// let server = McpServer::new("quotes", "1.0.0").task(quote);
/// let mut harness = Harness::new(&server);
/// let id = harness.create("quote", json!({ "symbol": "ACME" }));
/// harness.run_until_idle(); // attempt 1 fails; the next is 2 s away
/// harness.advance("2s"); // attempt 2 fails
/// harness.advance("2s"); // attempt 3 succeeds and the task completes
/// assert_eq!(harness.status(&id), TaskStatus::Completed);
/// assert_eq!(harness.result(&id).unwrap()["content"][0]["text"], "ACME: 101.5");
/// assert_eq!(CALLS.load(Ordering::SeqCst), 3);
/// # }
/// ```
///
/// # Mistakes caught at compile time
///
/// The output must be storable in the journal:
///
/// ```compile_fail
/// use durable_mcp::{StepError, step};
///
/// struct Rows(Vec<u32>); // error: step output `Rows` must be Serialize + DeserializeOwned
///
/// #[step]
/// async fn fetch_rows() -> Result<Rows, StepError> {
///     Ok(Rows(vec![3, 1, 4]))
/// }
/// ```
///
/// The error type is [`StepError`], which carries whether to retry: convert other errors
/// with `?` inside the body (`Result<T, std::io::Error>` is refused at the type, naming
/// `StepError`). The fn must be `async`, not generic and not a method; options are checked as
/// for [`mcp_task`].
#[doc(inline)]
pub use durable_mcp_macros::step;
pub use rpc::{
    CompletionCall, IntoPlainTool, IntoTaskTool, LogLevel, McpServer, Notifier, Outcome, PlainTool,
    Preparation, PromptCall, PromptOutcome, Request, TaskTool, ToolCall, ToolOutcome,
};
pub use runtime::{
    ChildTask, ChildTool, Elicit, ElicitOutcome, ElicitWithin, IntoDelay, LocalBoxFuture, Status,
    Step, StepError, StepFailureKind, TaskContext, TaskDefinition, TaskError, TaskHandler,
    TaskOptions, TaskRegistry,
};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
