//! Helpers of the black-box HTTP tests: the server under test, schema validation and a
//! 2025-era client; and the suite's 2025 section (`era_2025`) and its push section (`listen`).
#![allow(dead_code)]

pub mod client_2025;
mod era_2025;
mod listen;
pub mod schema;
pub mod target;

pub use schema::{Spec, assert_complete_ack, assert_matches_schema, assert_result, assert_valid};
pub use target::Target;

/// Checks the structured result of the `forecast` fixture (a `#[tool]` returning `Json<T>`)
/// against the tool as listed: `structuredContent` matches its `outputSchema`, and the text
/// beside it is the same JSON, for clients that read only content.
pub fn assert_forecast(tool: &serde_json::Value, result: &serde_json::Value) {
    let structured = &result["structuredContent"];
    assert_matches_schema(&tool["outputSchema"], structured);
    assert_eq!(structured["city"], "Lisbon", "{result}");
    assert!(structured["celsius"].is_number(), "{result}");
    let text = result["content"][0]["text"].as_str().expect("a text block");
    assert_eq!(
        &serde_json::from_str::<serde_json::Value>(text).unwrap(),
        structured
    );
    assert!(result.get("isError").is_none_or(|e| e == false), "{result}");
}

/// Checks the `forecast` fixture as `tools/list` shows it: a derived input schema with the
/// doc comments as descriptions, an object `outputSchema`, a title and annotations.
pub fn assert_forecast_listed(tool: &serde_json::Value) {
    let input = &tool["inputSchema"];
    assert_eq!(input["type"], "object", "{tool}");
    assert_eq!(input["required"], serde_json::json!(["city"]), "{tool}");
    assert_eq!(
        input["properties"]["city"]["description"],
        "The city's name, not empty."
    );
    assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
    assert_eq!(tool["title"], "Forecast");
    assert!(
        tool["description"]
            .as_str()
            .unwrap()
            .starts_with("Forecasts the weather")
    );
    assert_eq!(
        tool["annotations"],
        serde_json::json!({ "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false })
    );
}
