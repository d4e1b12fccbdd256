//! JSON Schema and elicitation-form shapes the fixtures share.

use serde_json::{Value, json};

/// An object schema with `properties` and nothing required.
pub fn object(properties: Value) -> Value {
    json!({ "type": "object", "properties": properties })
}

/// The params of a form elicitation asking `message`, with answers shaped by `properties`.
pub fn form(message: &str, properties: Value) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": { "type": "object", "properties": properties },
    })
}

/// A form elicitation for one required string `field`.
pub fn ask_string(message: &str, field: &str) -> Value {
    ask_one(message, field, "string")
}

/// A form elicitation for one required boolean `field`.
pub fn ask_boolean(message: &str, field: &str) -> Value {
    ask_one(message, field, "boolean")
}

fn ask_one(message: &str, field: &str, kind: &str) -> Value {
    let mut params = form(message, json!({ field: { "type": kind } }));
    params["requestedSchema"]["required"] = json!([field]);
    params
}
