//! The 2025-era session, kept by the client: `initialize` answers an `Mcp-Session-Id` that
//! encodes what was negotiated (the revision and the client's capabilities) plus a random
//! nonce, and every later request carries it back. No server keeps anything, so any process
//! or isolate can serve any request (a Worker's requests land on any isolate). The client can
//! only misstate its own capabilities, which harms nobody else; the nonce names the session's
//! tasks in `tasks/list` for a caller the server did not authenticate.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The header carrying the session.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The prefix of every session id this server issues (its format's version).
const PREFIX: &str = "dm1.";

/// What a 2025-era client negotiated at `initialize`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LegacySession {
    /// The revision agreed on.
    #[serde(rename = "v")]
    pub version: String,
    /// The client may be sent `elicitation/create`.
    #[serde(rename = "e", default)]
    pub elicitation: bool,
    /// The client may be sent `sampling/createMessage`.
    #[serde(rename = "s", default)]
    pub sampling: bool,
    /// The client may be sent `roots/list`.
    #[serde(rename = "r", default)]
    pub roots: bool,
    /// The client declared 2025-11-25 tasks.
    #[serde(rename = "t", default)]
    pub tasks: bool,
    /// 128 random bits naming this session.
    #[serde(rename = "n")]
    pub nonce: String,
}

impl LegacySession {
    /// The session of a client that sent `capabilities` at `initialize` and agreed on
    /// `version`.
    pub fn negotiated(version: &str, capabilities: &Value) -> Result<Self, String> {
        let declared = |name: &str| capabilities.get(name).is_some_and(Value::is_object);
        Ok(LegacySession {
            version: version.to_owned(),
            elicitation: declared("elicitation"),
            sampling: declared("sampling"),
            roots: declared("roots"),
            tasks: declared("tasks"),
            nonce: crate::runtime::new_task_id().map_err(|error| error.to_string())?,
        })
    }

    /// The `Mcp-Session-Id` value: visible ASCII only.
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
    }

    /// The session an `Mcp-Session-Id` names; `None` for one this server did not issue.
    pub fn decode(id: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD
            .decode(id.trim().strip_prefix(PREFIX)?)
            .ok()?;
        // from_str, as everywhere in the Worker: one JSON reader instead of two.
        let session: LegacySession =
            serde_json::from_str(std::str::from_utf8(&bytes).ok()?).ok()?;
        (!session.nonce.is_empty()).then_some(session)
    }

    /// The client capabilities this session stands for, as a request's envelope would carry
    /// them (for the handlers shared with the 2026-07-28 lane).
    pub fn capabilities(&self) -> crate::wire::ClientCapabilities {
        let mut capabilities = crate::wire::ClientCapabilities::default();
        for (declared, name) in [
            (self.elicitation, "elicitation"),
            (self.sampling, "sampling"),
        ] {
            if declared {
                capabilities
                    .other
                    .insert(name.to_owned(), Value::Object(Default::default()));
            }
        }
        capabilities
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_round_trips_and_foreign_ids_are_refused() {
        let caps = serde_json::json!({ "elicitation": {}, "tasks": { "list": {} } });
        let session = LegacySession::negotiated("2025-11-25", &caps).unwrap();
        assert!(session.elicitation && session.tasks && !session.sampling);
        let id = session.encode();
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
        assert_eq!(LegacySession::decode(&id), Some(session));
        assert_eq!(LegacySession::decode("dm1.!!!"), None);
        assert_eq!(LegacySession::decode("abc"), None);
    }
}
