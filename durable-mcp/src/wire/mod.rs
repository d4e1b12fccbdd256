//! The MCP wire: JSON-RPC 2.0 framing, the 2026-07-28 per-request envelope, and the results the
//! router serves (tools, resources, prompts, completion), including the Tasks extension
//! (`io.modelcontextprotocol/tasks`).
//!
//! Field names are exactly the wire's; tests validate what the router emits against the upstream
//! JSON Schemas. Types here only describe shapes: the router decides what to send.

pub mod completion;
pub mod envelope;
pub mod jsonrpc;
pub mod legacy;
pub mod params;
pub mod prompts;
pub mod resources;
pub mod tasks;
pub mod tools;

pub use completion::{
    CompleteParams, Completion, CompletionArgument, CompletionContext, CompletionReference,
};
pub use envelope::{
    CacheScope, ClientCapabilities, Implementation, PROTOCOL_VERSION, RequestMeta,
    SUPPORTED_VERSIONS, TASKS_EXTENSION,
};
pub use jsonrpc::{ErrorObject, RequestId, code};
pub use prompts::{GetPromptParams, GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
pub use resources::{Resource, ResourceContents, ResourceTemplate};
pub use tasks::{CreateTaskResult, DetailedTask, META_STATUS, TaskStatusWire};
pub use tools::{CallToolResult, Content, InputRequiredResult, IntoCallToolResult, Json, Tool};
