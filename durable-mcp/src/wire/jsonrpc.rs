//! JSON-RPC 2.0 framing: ids, error objects, the codes MCP uses.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request id: a string or an integer (JSON-RPC allows both; MCP forbids null).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

/// The error codes the router sends.
pub mod code {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The body is JSON but not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method (or one the 2026-07-28 revision removed).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Parameters of the wrong shape, an unknown tool, an unknown task.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The request is not authenticated (implementation range).
    pub const UNAUTHORIZED: i64 = -32001;
    /// A resource that does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// An HTTP header disagrees with the body, or is missing.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The request's protocol version is not one the server speaks.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The code (see [`code`]).
    pub code: i64,
    /// One sentence saying what went wrong.
    pub message: String,
    /// Structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// A success response carrying `result`.
pub fn success(id: &RequestId, result: Value) -> Value {
    serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// [`success`] written out as JSON text, without building the response's tree first.
pub fn success_text(id: &RequestId, result: &Value) -> Vec<u8> {
    // The fields in the order `success`'s object writes its keys, so both give the same text.
    #[derive(Serialize)]
    struct Success<'a> {
        id: &'a RequestId,
        jsonrpc: &'static str,
        result: &'a Value,
    }
    let response = Success {
        id,
        jsonrpc: "2.0",
        result,
    };
    // Writing a `Value` and an id into memory cannot fail.
    serde_json::to_vec(&response).unwrap_or_default()
}

/// An error response; `id` is absent when the request's id could not be read.
pub fn failure(id: Option<&RequestId>, error: &ErrorObject) -> Value {
    let mut response = serde_json::json!({ "jsonrpc": "2.0", "error": error });
    if let Some(id) = id {
        response["id"] = serde_json::json!(id);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_text_is_the_text_of_success() {
        let result = serde_json::json!({ "taskId": "t", "_meta": { "a": [1, "b"] }, "z": null });
        for id in [RequestId::Number(7), RequestId::String("x\"y".into())] {
            let text = success_text(&id, &result);
            assert_eq!(
                String::from_utf8(text).unwrap(),
                success(&id, result.clone()).to_string()
            );
        }
    }
}
