//! What an input request must look like for clients to show it: the params of
//! `elicitation/create`, in form mode (a message and a flat schema of the fields to fill in)
//! or URL mode (a message and a page to open).

use serde_json::Value;

/// How a request the official clients can show is written, for error messages.
pub const ELICITATION_SHAPES: &str = "write {\"mode\": \"form\", \"message\": \"...\", \
     \"requestedSchema\": {\"type\": \"object\", \"properties\": {\"approve\": {\"type\": \
     \"boolean\"}}, \"required\": [...]}} or {\"mode\": \"url\", \"message\": \"...\", \"url\": \
     \"https://...\"}";

/// Why `request` is not an elicitation clients can show, if it is not.
pub fn check_elicitation(request: &Value) -> Result<(), String> {
    let Some(request) = request.as_object() else {
        return Err("it is not a JSON object".to_owned());
    };
    if !request.get("message").is_some_and(Value::is_string) {
        return Err("it has no \"message\" string".to_owned());
    }
    match request.get("mode").map(|mode| mode.as_str()) {
        None | Some(Some("form")) => check_form_schema(request.get("requestedSchema")),
        Some(Some("url")) if request.get("url").is_some_and(Value::is_string) => Ok(()),
        Some(Some("url")) => Err("a \"url\" mode request has no \"url\" string".to_owned()),
        Some(mode) => Err(format!(
            "its \"mode\" is {}, not \"form\" or \"url\"",
            mode.map_or_else(|| "not a string".to_owned(), |mode| format!("{mode:?}"))
        )),
    }
}

/// A form's schema: an object schema whose properties are flat (no nested objects).
fn check_form_schema(schema: Option<&Value>) -> Result<(), String> {
    let Some(schema) = schema.and_then(Value::as_object) else {
        return Err("a form request has no \"requestedSchema\" object".to_owned());
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("its \"requestedSchema\" is not {\"type\": \"object\", ...}".to_owned());
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Err("its \"requestedSchema\" has no \"properties\" object".to_owned());
    };
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str);
        if !property.is_object() || kind == Some("object") {
            return Err(format!(
                "its field {name:?} is not a flat field (a string, number, integer, boolean or \
                 enum schema)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn form_and_url_requests_pass() {
        let form = json!({
            "mode": "form",
            "message": "Send it?",
            "requestedSchema": {
                "type": "object",
                "properties": { "approve": { "type": "boolean" } },
                "required": ["approve"],
            },
        });
        assert_eq!(check_elicitation(&form), Ok(()));
        let mut without_mode = form.clone();
        without_mode.as_object_mut().unwrap().remove("mode");
        assert_eq!(check_elicitation(&without_mode), Ok(()));
        let url = json!({ "mode": "url", "message": "Sign in", "url": "https://example.org" });
        assert_eq!(check_elicitation(&url), Ok(()));
    }

    #[test]
    fn requests_clients_cannot_show_are_refused_with_the_reason() {
        let refused = [
            (json!("Send it?"), "not a JSON object"),
            (json!({ "message": "Send it?" }), "no \"requestedSchema\""),
            (json!({}), "no \"message\""),
            (json!({ "message": "?", "mode": "sms" }), "\"sms\""),
            (json!({ "message": "?", "mode": "url" }), "no \"url\""),
            (
                json!({ "message": "?", "requestedSchema": { "type": "string" } }),
                "not {\"type\": \"object\"",
            ),
            (
                json!({ "message": "?", "requestedSchema": { "type": "object" } }),
                "no \"properties\"",
            ),
            (
                json!({ "message": "?", "requestedSchema": { "type": "object",
                    "properties": { "address": { "type": "object" } } } }),
                "\"address\" is not a flat field",
            ),
        ];
        for (request, reason) in refused {
            let error = check_elicitation(&request).unwrap_err();
            assert!(error.contains(reason), "{request}: {error}");
        }
    }
}
