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
//! | `forecast` | `Json<Forecast>`: structured content, its text beside it, and an `outputSchema` |

use durable_mcp::wire::{CallToolResult, Content, ErrorObject, Json, Tool};
use durable_mcp::{McpServer, PlainTool, ToolCall, ToolOutcome, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::media::{RED_PIXEL_PNG, SILENCE_WAV};

/// Adds the content fixtures to `server`. The tools whose schemas are written by hand (to
/// carry keywords a derived schema does not) are `PlainTool`s; the others are `#[tool]` fns.
pub fn add(server: McpServer) -> McpServer {
    server
        .tool(test_simple_text)
        .tool(test_image_content)
        .tool(test_audio_content)
        .tool(test_embedded_resource)
        .tool(test_multiple_content_types)
        .tool(test_error_handling)
        .tool(PlainTool::new(
            Tool::new("json_schema_2020_12_tool", contact_schema()).description(
                "Takes a contact; its input schema uses JSON Schema 2020-12 keywords.",
            ),
            |_| answer(CallToolResult::text("ok")),
        ))
        .tool(PlainTool::new(
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
        ))
        .tool(forecast)
}

/// Answers with one text block.
#[tool]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Answers with a 1x1 red PNG.
#[tool]
async fn test_image_content() -> CallToolResult {
    only(image())
}

/// Answers with a short silent WAV.
#[tool]
async fn test_audio_content() -> CallToolResult {
    only(Content::Audio {
        data: SILENCE_WAV.to_owned(),
        mime_type: "audio/wav".to_owned(),
    })
}

/// Answers with an embedded text resource.
#[tool]
async fn test_embedded_resource() -> CallToolResult {
    only(embedded(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

/// Answers with text, an image and an embedded resource.
#[tool]
async fn test_multiple_content_types() -> CallToolResult {
    CallToolResult::new(vec![
        Content::text("Multiple content types test:"),
        image(),
        embedded(
            "test://mixed-content-resource",
            "application/json",
            &json!({ "test": "data", "value": 123 }).to_string(),
        ),
    ])
}

/// Always fails, as a tool error the model can read.
#[tool]
async fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".to_owned())
}

/// Where to forecast.
#[derive(Debug, Deserialize, JsonSchema)]
struct Place {
    /// The city's name, not empty.
    city: String,
    /// The number of days ahead (0 to 6).
    #[serde(default)]
    #[schemars(range(max = 6))]
    days: u8,
}

/// A forecast.
#[derive(Debug, Serialize, JsonSchema)]
struct Forecast {
    /// The city forecast for.
    city: String,
    /// The temperature, in degrees Celsius.
    celsius: f64,
    /// The sky: "clear", "cloudy" or "rain".
    sky: String,
}

/// Forecasts the weather of `city`, `days` ahead, as structured content (a made-up forecast,
/// the same for the same place).
#[tool(
    title = "Forecast",
    annotations(read_only, idempotent, open_world = false)
)]
async fn forecast(input: Place) -> Result<Json<Forecast>, String> {
    let city = input.city.trim();
    if city.is_empty() {
        return Err("`city` is empty: name a city".to_owned());
    }
    if input.days > 6 {
        return Err(format!(
            "`days` is {}: forecasts go 6 days ahead at most",
            input.days
        ));
    }
    let seed = city.bytes().map(u32::from).sum::<u32>() + u32::from(input.days);
    let sky = ["clear", "cloudy", "rain"][(seed % 3) as usize];
    Ok(Json(Forecast {
        city: city.to_owned(),
        celsius: f64::from(seed % 30) - 5.0,
        sky: sky.to_owned(),
    }))
}

/// A handler's result, ready at once.
fn answer(result: CallToolResult) -> std::future::Ready<Result<ToolOutcome, ErrorObject>> {
    std::future::ready(Ok(result.into()))
}

fn only(content: Content) -> CallToolResult {
    CallToolResult::new(vec![content])
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
