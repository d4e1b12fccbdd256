//! The duration grammar, shared with the runtime: the macros validate literals with the very
//! parser (and test table) the runtime uses.

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../../durable-mcp/src/core/time.rs"]
mod time;

pub use time::parse_duration;

#[cfg(test)]
pub use time::{DURATION_CASES, duration_millis};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_macros_read_durations_as_the_runtime_does() {
        for (text, expected) in DURATION_CASES {
            let parsed = parse_duration(text).ok().map(duration_millis);
            assert_eq!(parsed, *expected, "case {text:?}");
        }
    }
}
