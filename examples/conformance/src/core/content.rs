//! Plain tools that answer at once, one per kind of result the core `tools-*` scenarios read:
//!
//! | tool | answers |
//! | --- | --- |
//! | `test_simple_text` | one text block |
//! | `test_image_content` | one PNG image block |
//! | `test_audio_content` | one WAV audio block |
//! | `test_embedded_resource` | one embedded text resource |
//! | `test_multiple_content_types` | text, image and embedded JSON resource together |
//! | `test_error_handling` | a tool error (`isError: true`), not a JSON-RPC error |
//! | `json_schema_2020_12_tool` | `ok`; its input schema uses 2020-12 keywords |
//! | `echo_region` | its `region` argument, mirrored in the `Mcp-Param-Region` header |

use durable_mcp::wire::{CallToolResult, Content, ErrorObject, Tool};
use durable_mcp::{McpServer, ToolCall, ToolOutcome};
use serde_json::{Value, json};

use super::media::{RED_PIXEL_PNG, SILENCE_WAV};
use super::no_arguments;

/// Adds the content fixtures to `server`.
pub fn add(server: McpServer) -> McpServer {
    server
        .tool(
            no_arguments("test_simple_text", "Answers with one text block."),
            |_| {
                answer(CallToolResult::text(
                    "This is a simple text response for testing.",
                ))
            },
        )
        .tool(
            no_arguments("test_image_content", "Answers with a 1x1 red PNG."),
            |_| answer(only(image())),
        )
        .tool(
            no_arguments("test_audio_content", "Answers with a short silent WAV."),
            |_| {
                answer(only(Content::Audio {
                    data: SILENCE_WAV.to_owned(),
                    mime_type: "audio/wav".to_owned(),
                }))
            },
        )
        .tool(
            no_arguments(
                "test_embedded_resource",
                "Answers with an embedded text resource.",
            ),
            |_| {
                answer(only(embedded(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                )))
            },
        )
        .tool(
            no_arguments(
                "test_multiple_content_types",
                "Answers with text, an image and an embedded resource.",
            ),
            |_| {
                answer(CallToolResult {
                    content: vec![
                        Content::text("Multiple content types test:"),
                        image(),
                        embedded(
                            "test://mixed-content-resource",
                            "application/json",
                            &json!({ "test": "data", "value": 123 }).to_string(),
                        ),
                    ],
                    ..CallToolResult::default()
                })
            },
        )
        .tool(
            no_arguments(
                "test_error_handling",
                "Always fails, as a tool error the model can read.",
            ),
            |_| {
                answer(CallToolResult::error(
                    "This tool intentionally returns an error for testing",
                ))
            },
        )
        .tool(
            Tool::new("json_schema_2020_12_tool", contact_schema()).description(
                "Takes a contact; its input schema uses JSON Schema 2020-12 keywords.",
            ),
            |_| answer(CallToolResult::text("ok")),
        )
        .tool(
            Tool::new("echo_region", region_schema()).description(
                "Echoes `region`, which clients also send in the Mcp-Param-Region header.",
            ),
            |call: ToolCall| {
                let region = call.arguments["region"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                answer(CallToolResult::text(format!("region={region}")))
            },
        )
}

/// A handler's result, ready at once.
fn answer(result: CallToolResult) -> std::future::Ready<Result<ToolOutcome, ErrorObject>> {
    std::future::ready(Ok(result.into()))
}

fn only(content: Content) -> CallToolResult {
    CallToolResult {
        content: vec![content],
        ..CallToolResult::default()
    }
}

pub(super) fn image() -> Content {
    Content::Image {
        data: RED_PIXEL_PNG.to_owned(),
        mime_type: "image/png".to_owned(),
    }
}

pub(super) fn embedded(uri: &str, mime_type: &str, text: &str) -> Content {
    Content::Resource {
        resource: json!({ "uri": uri, "mimeType": mime_type, "text": text }),
    }
}

/// A contact to file: a reference into `$defs` (with an anchor), a choice between phone and
/// email (`allOf`/`anyOf`) that the chosen channel narrows (`if`/`then`/`else`), and no other
/// fields. Clients must pass every keyword through untouched.
fn contact_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "postalAddress",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" },
                    "postcode": { "type": "string" },
                },
            },
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string", "format": "email" },
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"],
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false,
    })
}

/// One string argument that clients mirror into the `Mcp-Param-Region` header (SEP-2243), so
/// a proxy can route on it without reading the body.
fn region_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
        },
        "required": ["region"],
    })
}
