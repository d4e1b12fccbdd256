//! Input requests a call may send besides elicitations (which `InputRequiredResult::elicit`
//! builds), and readers that accept an answer (to a tool call or a prompt) only when it has the
//! shape its request implies.
//! A missing or malformed answer reads as `None`, so the tool asks again instead of guessing.

use durable_mcp::Request;
use serde_json::{Map, Value, json};

/// A `sampling/createMessage` request asking the client's model `prompt`.
pub fn sample(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": max_tokens,
        },
    })
}

/// A `roots/list` request.
pub fn list_roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

/// What the user did with an elicitation.
#[derive(Clone, Debug, PartialEq)]
pub enum Elicited {
    /// Accepted, with the form's content.
    Accepted(Map<String, Value>),
    /// Declined or cancelled: an answer, but no data.
    Refused,
}

/// The answer to elicitation `key`, if it is a well-formed `ElicitResult`.
pub fn elicited<A>(call: &Request<A>, key: &str) -> Option<Elicited> {
    let answer = call.input_response(key)?.as_object()?;
    match answer.get("action")?.as_str()? {
        "accept" => Some(Elicited::Accepted(
            answer.get("content")?.as_object()?.clone(),
        )),
        "decline" | "cancel" => Some(Elicited::Refused),
        _ => None,
    }
}

/// The string `field` of an accepted elicitation `key`: `Some(None)` if the user refused.
pub fn elicited_string<A>(call: &Request<A>, key: &str, field: &str) -> Option<Option<String>> {
    match elicited(call, key)? {
        Elicited::Accepted(content) => Some(Some(content.get(field)?.as_str()?.to_owned())),
        Elicited::Refused => Some(None),
    }
}

/// The text the client's model answered to sampling request `key`.
pub fn sampled_text<A>(call: &Request<A>, key: &str) -> Option<String> {
    let content = call.input_response(key)?.get("content")?;
    // One content block, or (since 2025-11-25) an array of them.
    let block = match content {
        Value::Array(blocks) => blocks.iter().find(|block| block["type"] == "text")?,
        block => block,
    };
    Some(block.get("text")?.as_str()?.to_owned())
}

/// The URIs of the roots the client listed for request `key`.
pub fn listed_roots<A>(call: &Request<A>, key: &str) -> Option<Vec<String>> {
    let roots = call.input_response(key)?.get("roots")?.as_array()?;
    roots
        .iter()
        .map(|root| Some(root.get("uri")?.as_str()?.to_owned()))
        .collect()
}
