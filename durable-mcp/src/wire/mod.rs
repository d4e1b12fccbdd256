//! The MCP values a server's handlers build and return: tool results and their content,
//! structured output ([`Json`]), tool definitions, prompts, resources, completions, and the
//! JSON-RPC error a handler can answer with ([`ErrorObject`], [`code`]).
//!
//! Field names are exactly the wire's; the workspace's tests validate what the router emits
//! against the upstream schemas. The envelopes, parameters and task shapes of both protocol
//! eras are the router's own and stay inside the crate.

pub(crate) mod completion;
pub(crate) mod envelope;
pub(crate) mod jsonrpc;
#[cfg(feature = "mcp-2025")]
pub(crate) mod legacy;
pub(crate) mod params;
pub(crate) mod prompts;
pub(crate) mod resources;
pub(crate) mod tasks;
pub(crate) mod tools;

pub use completion::{Completion, CompletionArgument, CompletionContext, CompletionReference};
pub use jsonrpc::{ErrorObject, code};
pub use prompts::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
pub use resources::{Resource, ResourceContents, ResourceTemplate};
pub use tools::{CallToolResult, Content, InputRequiredResult, IntoCallToolResult, Json, Tool};

pub(crate) use completion::CompleteParams;
pub(crate) use envelope::{
    ClientCapabilities, Implementation, LEGACY_VERSIONS, RequestMeta, SUPPORTED_VERSIONS,
};
pub(crate) use jsonrpc::RequestId;
pub(crate) use prompts::GetPromptParams;
pub(crate) use tasks::{CreateTaskResult, DetailedTask};
