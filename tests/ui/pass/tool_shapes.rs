// Checks: every shape a #[tool] fn may have compiles: with or without the call, with or
// without an input, fallible or not; and the input schema is derived with its doc comments.
use durable_mcp::{McpServer, ToolCall, tool};

/// What to greet.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {
    /// Whom.
    name: String,
}

#[tool]
async fn bare() -> String {
    String::new()
}

#[tool]
async fn with_input(input: Input) -> Result<String, String> {
    Ok(input.name)
}

#[tool]
async fn with_call(call: &ToolCall) -> String {
    call.principal.clone().unwrap_or_default()
}

#[tool]
async fn with_both(call: &ToolCall, input: Input) -> Result<String, std::io::Error> {
    call.notify.progress(1.0, None, Some("working"));
    Ok(input.name)
}

fn main() {
    let schema = with_input().tool().input_schema.clone();
    assert_eq!(schema["properties"]["name"]["description"], "Whom.");
    assert_eq!(bare().tool().input_schema["type"], "object");
    let _server = McpServer::new("ui", "0")
        .tool(bare)
        .tool(with_input)
        .tool(with_call)
        .tool(with_both);
}
