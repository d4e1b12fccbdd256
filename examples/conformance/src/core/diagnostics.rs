//! The diagnostic tools the stateless-server scenario (`server-stateless`, SEP-2575) probes:
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `test_missing_capability` | needs the client's `sampling` capability: -32021 without it |
//! | `test_streaming_elicitation` | asks a name inside its own result (`input_required`) |
//! | `test_logging_tool` | does its work; logs nothing, since no log level was asked for |
//! | `test_trigger_tool_change` | tells the listening clients that the tool list changed |
//! | `test_trigger_prompt_change` | tells the listening clients that the prompt list changed |
//!
//! The two triggers stand for a server whose lists change at run time: this fixture's lists
//! stay the same, and the scenario checks only that each `subscriptions/listen` stream that
//! asked for the change hears of it, and that no other does.

use durable_mcp::PlainTool;
use durable_mcp::wire::{CallToolResult, ErrorObject, InputRequiredResult, code};
use durable_mcp::{McpServer, ToolCall, ToolOutcome, tool};
use serde_json::json;

use super::input::sample;
use super::input_required::greet_by_name;
use super::no_arguments;

/// Adds the diagnostic tools to `server`.
pub fn add(server: McpServer) -> McpServer {
    server
        .tool(PlainTool::new(
            no_arguments(
                "test_missing_capability",
                "Needs the client's sampling capability, and refuses without it.",
            ),
            |call| std::future::ready(sample_if_declared(&call)),
        ))
        .tool(test_streaming_elicitation)
        .tool(PlainTool::new(
            no_arguments(
                "test_logging_tool",
                "Works, logging only at a log level the request asks for.",
            ),
            |_| {
                // durable-mcp has no log notifications, so the tool never logs.
                std::future::ready(Ok(CallToolResult::text("done, nothing logged").into()))
            },
        ))
        .tool(PlainTool::new(
            no_arguments(
                "test_trigger_tool_change",
                "Tells the clients listening for it that the tool list changed.",
            ),
            |call| {
                call.notify.tools_list_changed();
                std::future::ready(Ok(CallToolResult::text("tool list change announced").into()))
            },
        ))
        .tool(PlainTool::new(
            no_arguments(
                "test_trigger_prompt_change",
                "Tells the clients listening for it that the prompt list changed.",
            ),
            |call| {
                call.notify.prompts_list_changed();
                let done = CallToolResult::text("prompt list change announced");
                std::future::ready(Ok(done.into()))
            },
        ))
}

/// Asks the user's name in its own result, never as a separate request.
#[tool]
async fn test_streaming_elicitation(call: &ToolCall) -> ToolOutcome {
    greet_by_name(call)
}

/// A server MUST NOT rely on a capability the client did not declare: without `sampling`
/// declared in this request, refuse with -32021; with it, ask the model.
fn sample_if_declared(call: &ToolCall) -> Result<ToolOutcome, ErrorObject> {
    if call.client_capabilities.other.contains_key("sampling") {
        let mut input = InputRequiredResult::default();
        input
            .input_requests
            .insert("answer".to_owned(), sample("Say hello", 20));
        return Ok(input.into());
    }
    Err(ErrorObject::new(
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability: test_missing_capability needs sampling declared \
         in this request's _meta clientCapabilities",
    )
    .with_data(json!({ "requiredCapabilities": { "sampling": {} } })))
}
