//! The fixtures of the 2025-era scenarios whose tools talk to the client while they work:
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `test_tool_with_logging` | logs three info messages, then answers |
//! | `test_sampling` | asks the client's model `prompt`, answers with what it said |
//! | `test_elicitation` | asks the user for a username and an email |
//! | `test_elicitation_sep1034_defaults` | a form whose fields carry defaults (SEP-1034) |
//! | `test_elicitation_sep1330_enums` | a form with every enum style (SEP-1330) |
//!
//! Each asks through an `InputRequiredResult`: a 2026-07-28 client answers it with a retry,
//! and on the 2025 lane the router sends each request to the client on the call's stream and
//! runs the tool again with the answers.

use durable_mcp::PlainTool;
use durable_mcp::wire::{CallToolResult, ErrorObject, InputRequiredResult, Tool};
use durable_mcp::{LogLevel, McpServer, ToolCall, ToolOutcome};
use serde_json::{Value, json};

use super::input::{Elicited, elicited, sample, sampled_text};
use super::no_arguments;
use crate::schema::object;

/// Adds the fixtures to `server`.
pub fn add(server: McpServer) -> McpServer {
    let form = |name: &str, description: &str, schema: fn() -> Value| {
        (no_arguments(name, description), move |call: ToolCall| {
            std::future::ready(ask_form(&call, "Please fill in the form", schema()))
        })
    };
    let (defaults, ask_defaults) = form(
        "test_elicitation_sep1034_defaults",
        "Asks for a form whose fields carry defaults.",
        defaults_schema,
    );
    let (enums, ask_enums) = form(
        "test_elicitation_sep1330_enums",
        "Asks for a form with every style of enumeration.",
        enums_schema,
    );
    server
        .tool(PlainTool::new(
            no_arguments(
                "test_tool_with_logging",
                "Logs three messages while it works.",
            ),
            |call: ToolCall| {
                for step in ["starting", "halfway", "finished"] {
                    call.notify
                        .log(LogLevel::Info, Some("test_tool_with_logging"), step);
                }
                std::future::ready(Ok(CallToolResult::text("logged three messages").into()))
            },
        ))
        .tool(PlainTool::new(
            Tool::new(
                "test_sampling",
                object(json!({ "prompt": { "type": "string" } })),
            )
            .description("Asks the client's model the prompt and answers with its reply."),
            |call: ToolCall| std::future::ready(ask_model(&call)),
        ))
        .tool(PlainTool::new(
            Tool::new(
                "test_elicitation",
                object(json!({ "message": { "type": "string" } })),
            )
            .description("Asks the user for a username and an email."),
            |call: ToolCall| {
                let message = call.arguments["message"]
                    .as_str()
                    .unwrap_or("Please provide your information")
                    .to_owned();
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string" },
                        "email": { "type": "string" },
                    },
                    "required": ["username", "email"],
                });
                std::future::ready(ask_form(&call, &message, schema))
            },
        ))
        .tool(PlainTool::new(defaults, ask_defaults))
        .tool(PlainTool::new(enums, ask_enums))
}

fn ask_model(call: &ToolCall) -> Result<ToolOutcome, ErrorObject> {
    if let Some(text) = sampled_text(call, "reply") {
        return Ok(CallToolResult::text(format!("The model said: {text}")).into());
    }
    let prompt = call.arguments["prompt"].as_str().unwrap_or("Say hello");
    let mut input = InputRequiredResult::default();
    input
        .input_requests
        .insert("reply".to_owned(), sample(prompt, 100));
    Ok(input.into())
}

/// Asks for the form `schema` under the key `form`, and answers with what the user filled in.
fn ask_form(call: &ToolCall, message: &str, schema: Value) -> Result<ToolOutcome, ErrorObject> {
    match elicited(call, "form") {
        Some(Elicited::Accepted(content)) => {
            Ok(CallToolResult::text(format!("received {}", Value::Object(content))).into())
        }
        Some(Elicited::Refused) => Ok(CallToolResult::text("the user declined").into()),
        None => Ok(InputRequiredResult::default()
            .elicit(
                "form",
                json!({ "mode": "form", "message": message, "requestedSchema": schema }),
            )
            .into()),
    }
}

fn defaults_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": { "type": "boolean", "default": true },
        },
    })
}

fn enums_schema() -> Value {
    let colours = ["red", "green", "blue"];
    let titled = json!([
        { "const": "red", "title": "Red" },
        { "const": "green", "title": "Green" },
        { "const": "blue", "title": "Blue" },
    ]);
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": colours },
            "titledSingle": { "type": "string", "oneOf": titled },
            "legacyEnum": {
                "type": "string",
                "enum": colours,
                "enumNames": ["Red", "Green", "Blue"],
            },
            "untitledMulti": { "type": "array", "items": { "type": "string", "enum": colours } },
            "titledMulti": { "type": "array", "items": { "anyOf": titled } },
        },
    })
}
