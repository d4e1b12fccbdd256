//! The MCP router: a pure dispatcher from an HTTP exchange to the engine, serving the
//! 2026-07-28 stateless revision with the Tasks extension: tools, task tools, resources,
//! prompts and argument completion.
//!
//! A host converts each request on its MCP endpoint into an [`HttpRequest`], awaits
//! [`Router::handle`], and writes the [`HttpResponse`] back. The router never names an HTTP
//! library or an executor. See `docs/how-it-works.md` for the decision ladder.

mod authorization;
mod cors;
pub(crate) mod cursor;
mod dispatch;
mod error;
mod exchange;
mod follow;
pub(crate) mod headers;
mod http;
mod inline;
#[cfg(feature = "mcp-2025")]
pub(crate) mod legacy;
pub(crate) mod listen;
pub(crate) mod listeners;
mod notify;
mod prompts;
mod relay;
mod request;
mod router;
mod server;
#[cfg(feature = "mcp-2025")]
mod session;
pub mod sse;

pub use cors::CorsPolicy;
pub use cursor::{decode_cursor, encode_cursor};
pub use error::RpcError;
pub use headers::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER};
pub use http::{Headers, HttpRequest, HttpResponse};
pub use notify::{LogLevel, Notifier};
pub use prompts::CompletionCall;
pub use request::{Outcome, PromptCall, PromptOutcome, Request, ToolCall, ToolOutcome};
pub use router::Router;
pub use server::{
    IntoPlainTool, IntoTaskTool, McpServer, OriginPolicy, PlainTool, Preparation, TaskTool,
};
