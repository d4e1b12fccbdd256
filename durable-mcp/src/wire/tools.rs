//! Tools: their descriptors, the result of a call, and the multi-round-trip answer
//! (`InputRequiredResult`) a call may give before it can run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool as `tools/list` describes it: [`Tool::new`], then the setters. More fields may come
/// in a minor release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// The name clients call it by.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of `arguments` (an object schema).
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when the tool returns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Hints (`readOnlyHint`, `destructiveHint`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

impl Tool {
    /// A tool named `name` taking `arguments` that match `input_schema`.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the JSON Schema of the tool's `structuredContent` (an object schema).
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the tool annotations (`{"readOnlyHint": true, ...}`).
    #[must_use]
    pub fn annotations(mut self, annotations: Value) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// One block of a tool's unstructured result.
///
/// More kinds of block may come in a minor release: a `match` on one needs a `_` arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A base64 image.
    Image {
        /// Base64 bytes.
        data: String,
        /// Its MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Base64 audio.
    Audio {
        /// Base64 bytes.
        data: String,
        /// Its MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A resource's contents, embedded.
    Resource {
        /// Text or blob contents with a `uri`.
        resource: Value,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }
}

/// What a tool call (or a completed task) returns: [`CallToolResult::text`],
/// [`CallToolResult::error`] or [`CallToolResult::new`], then the setters. More fields may come
/// in a minor release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Unstructured content.
    pub content: Vec<Content>,
    /// A JSON object matching the tool's output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `true` when the tool failed; the model sees the content and may correct itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

impl CallToolResult {
    /// A successful result of the blocks `content`, in order.
    pub fn new(content: Vec<Content>) -> Self {
        CallToolResult {
            content,
            ..CallToolResult::default()
        }
    }

    /// A successful result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(text)],
            ..CallToolResult::default()
        }
    }

    /// A tool-level failure of one text block (`isError: true`).
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(text)],
            is_error: Some(true),
            ..CallToolResult::default()
        }
    }

    /// Adds structured content.
    #[must_use]
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }

    /// Marks the result a tool-level failure (`isError: true`), as [`CallToolResult::error`]
    /// does for one text block.
    #[must_use]
    pub fn with_error(mut self) -> Self {
        self.is_error = Some(true);
        self
    }

    /// The result as a JSON value (what a task body returns).
    pub fn into_value(self) -> Value {
        serde_json::to_value(self).expect("a CallToolResult always serialises")
    }
}

/// What a task tool's body may return: anything that converts into a [`CallToolResult`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool result",
    label = "return a CallToolResult, a String, or Json(value) for structured content",
    note = "a tool's result converts into a CallToolResult through IntoCallToolResult"
)]
pub trait IntoCallToolResult {
    /// The result.
    fn into_call_tool_result(self) -> CallToolResult;
}

impl IntoCallToolResult for CallToolResult {
    fn into_call_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoCallToolResult for String {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoCallToolResult for &str {
    fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

/// A serialisable value as a tool result: its JSON as `structuredContent`, and as text for
/// clients that read only `content`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => CallToolResult::text(value.to_string()).with_structured(value),
            Err(error) => {
                CallToolResult::error(format!("the result cannot be serialised: {error}"))
            }
        }
    }
}

/// A call's answer when the server needs input before it can run the call: the client fulfils
/// `inputRequests` and retries the same call with `inputResponses` and `requestState` echoed.
///
/// Built from [`InputRequiredResult::default`] with the setters; more fields may come in a
/// minor release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InputRequiredResult {
    /// Requests by key (`{"method": "elicitation/create", "params": {...}}`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input_requests: Map<String, Value>,
    /// Opaque state the client echoes byte for byte. Client-held: never trust it for
    /// authorisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl InputRequiredResult {
    /// Asks for one elicitation under `key`, with `params` as `elicitation/create` takes them
    /// (`{"mode": "form", "message": ..., "requestedSchema": {...}}`).
    #[must_use]
    pub fn elicit(mut self, key: impl Into<String>, params: Value) -> Self {
        self.input_requests
            .insert(key.into(), elicitation_request(params));
        self
    }

    /// Asks for one input request under `key`, given whole as the client is to run it
    /// (`{"method": "sampling/createMessage", "params": {...}}`): for requests other than
    /// elicitations, which [`elicit`](Self::elicit) writes.
    #[must_use]
    pub fn input_request(mut self, key: impl Into<String>, request: Value) -> Self {
        self.input_requests.insert(key.into(), request);
        self
    }

    /// Sets the state the client echoes.
    #[must_use]
    pub fn state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }
}

/// The input request object for an elicitation with `params`.
pub fn elicitation_request(params: Value) -> Value {
    serde_json::json!({ "method": "elicitation/create", "params": params })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_result_of_several_blocks_may_be_a_tool_error() {
        let result = CallToolResult::new(vec![Content::text("a"), Content::text("b")]);
        assert_eq!(result.is_error, None);
        assert_eq!(
            json!(result.with_error()),
            json!({ "content": [{ "type": "text", "text": "a" }, { "type": "text", "text": "b" }],
                    "isError": true })
        );
        assert_eq!(
            CallToolResult::new(vec![Content::text("x")]).with_error(),
            CallToolResult::error("x")
        );
    }

    #[test]
    fn input_requests_may_be_elicitations_or_given_whole() {
        let sampling = json!({ "method": "sampling/createMessage", "params": {} });
        let result = InputRequiredResult::default()
            .elicit("name", json!({ "mode": "form" }))
            .input_request("reply", sampling.clone())
            .state("s");
        assert_eq!(result.input_requests["reply"], sampling);
        assert_eq!(
            result.input_requests["name"]["method"],
            "elicitation/create"
        );
        assert_eq!(result.request_state.as_deref(), Some("s"));
    }

    #[test]
    fn a_tool_sets_its_output_schema_and_annotations() {
        let tool = Tool::new("t", json!({ "type": "object" }))
            .output_schema(json!({ "type": "object" }))
            .annotations(json!({ "readOnlyHint": true }));
        let wire = json!(tool);
        assert_eq!(wire["outputSchema"], json!({ "type": "object" }));
        assert_eq!(wire["annotations"], json!({ "readOnlyHint": true }));
    }
}
