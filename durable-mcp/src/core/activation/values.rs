//! The values a body hands over to be recorded (input requests, status meta), checked before
//! they are stored: a value that cannot be used fails the task where the body gave it.

use serde_json::Value;

use super::Serialised;
use crate::core::error::EngineError;
use crate::core::input::check_elicitation;
use crate::core::limits::{Limits, to_stored_json};

/// An input request as stored, once it is known to be an elicitation clients can show: a
/// request they cannot fails the task where it is asked, not in front of a user.
pub(super) fn input_request(
    limits: &Limits,
    key: &str,
    request: Serialised,
) -> Result<String, EngineError> {
    let what = || format!("the request of input {key:?}");
    let request = request.map_err(|error| EngineError::not_serialisable(what(), &error))?;
    if let Err(reason) = check_elicitation(&request) {
        let key = key.to_owned();
        return Err(EngineError::UnusableInputRequest { key, reason });
    }
    to_stored_json(limits, what, &request)
}

/// A status meta object as stored: a JSON object within the limit.
pub(super) fn status_meta(limits: &Limits, meta: Serialised) -> Result<String, EngineError> {
    let json = match meta {
        Ok(Value::Object(map)) => Value::Object(map).to_string(),
        Ok(other) => return Err(invalid_meta(format!("must be a JSON object, got {other}"))),
        Err(error) => return Err(invalid_meta(format!("cannot be serialised: {error}"))),
    };
    if json.len() > limits.max_status_meta_bytes {
        return Err(invalid_meta(format!(
            "is {} bytes of JSON, more than the limit of {} bytes",
            json.len(),
            limits.max_status_meta_bytes
        )));
    }
    Ok(json)
}

fn invalid_meta(reason: String) -> EngineError {
    EngineError::InvalidStatusMeta { reason }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_status_meta_is_an_object_within_the_limit() {
        let limits = Limits {
            max_status_meta_bytes: 16,
            ..Limits::DEFAULT
        };
        let meta = status_meta(&limits, Ok(json!({ "done": 3 })));
        assert_eq!(meta.as_deref(), Ok(r#"{"done":3}"#));
        let reason = |meta| match status_meta(&limits, Ok(meta)) {
            Err(EngineError::InvalidStatusMeta { reason }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason(json!([1])), "must be a JSON object, got [1]");
        let long = reason(json!({ "done": "0123456789" }));
        assert_eq!(long, "is 21 bytes of JSON, more than the limit of 16 bytes");
    }

    #[test]
    fn an_input_request_must_be_an_elicitation_within_the_limit() {
        let limits = Limits {
            max_value_bytes: 64,
            ..Limits::DEFAULT
        };
        let form = json!({
            "mode": "form",
            "message": "ok?",
            "requestedSchema": { "type": "object", "properties": {} }
        });
        assert!(input_request(&Limits::DEFAULT, "q", Ok(form.clone())).is_ok());
        assert!(matches!(
            input_request(&limits, "q", Ok(form)),
            Err(EngineError::ValueTooLarge { .. })
        ));
        assert!(matches!(
            input_request(&limits, "q", Ok(json!({ "mode": "sms" }))),
            Err(EngineError::UnusableInputRequest { key, .. }) if key == "q"
        ));
    }
}
