// Checks: what a #[tool] fn may return: text, content blocks, Json<T> (with an output
// schema) and a ToolOutcome (which may ask for input first); errors are any Display.
use durable_mcp::wire::{CallToolResult, InputRequiredResult, Json};
use durable_mcp::{ToolCall, ToolOutcome, tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

#[tool]
async fn text() -> &'static str {
    "text"
}

#[tool]
async fn blocks() -> Result<CallToolResult, String> {
    Ok(CallToolResult::text("a block"))
}

#[tool]
async fn structured() -> Result<Json<Sum>, std::fmt::Error> {
    Ok(Json(Sum { sum: 3 }))
}

#[tool]
async fn asks(call: &ToolCall) -> ToolOutcome {
    match call.input_response("ok") {
        Some(_) => CallToolResult::text("thanks").into(),
        None => InputRequiredResult::default()
            .elicit("ok", serde_json::json!({ "mode": "form", "message": "Ok?" }))
            .into(),
    }
}

fn main() {
    assert!(text().tool().output_schema.is_none());
    assert!(blocks().tool().output_schema.is_none());
    assert!(asks().tool().output_schema.is_none());
    let schema = structured().tool().output_schema.clone().unwrap();
    assert_eq!(schema["properties"]["sum"]["type"], "integer");
}
