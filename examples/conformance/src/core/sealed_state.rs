//! Integrity-protected `requestState`: the client holds it between rounds, so the server signs
//! what it puts there and refuses what it did not sign.
//!
//! The tag is SipHash under a key drawn at random when the process starts, so states do not
//! survive a restart (the client then starts over) and cannot be forged without the key. A
//! production server would use an HMAC under a configured secret so that every replica
//! accepts every other's states.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::OnceLock;

use durable_mcp::wire::{ErrorObject, code};

/// The state carrying `payload` for `tool`: `payload.tag`.
pub fn seal(tool: &str, payload: &str) -> String {
    format!("{payload}.{:016x}", tag(tool, payload))
}

/// The payload of a state [`seal`] made for `tool`; -32602 if it was altered, or sealed for
/// another tool.
pub fn open<'a>(tool: &str, state: &'a str) -> Result<&'a str, ErrorObject> {
    state
        .rsplit_once('.')
        .filter(|(payload, tag_hex)| *tag_hex == format!("{:016x}", tag(tool, payload)))
        .map(|(payload, _)| payload)
        .ok_or_else(|| {
            ErrorObject::new(
                code::INVALID_PARAMS,
                "Invalid params: requestState failed its integrity check; call again without it",
            )
        })
}

fn tag(tool: &str, payload: &str) -> u64 {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    // Binding the tool name stops a state issued by one tool being replayed to another.
    KEY.get_or_init(RandomState::new).hash_one((tool, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_what_it_sealed_and_nothing_else() {
        let state = seal("tool_a", "step1:Ada");
        assert_eq!(open("tool_a", &state).unwrap(), "step1:Ada");
        assert!(open("tool_b", &state).is_err());
        assert!(open("tool_a", &format!("{state}-TAMPERED")).is_err());
        assert!(open("tool_a", "step1:Ada").is_err());
    }
}
