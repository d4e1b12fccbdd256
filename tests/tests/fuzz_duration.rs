//! Fuzz target: the duration grammar (`core::parse_duration`, `core::format_duration`), which
//! the macros read at compile time through the same source.
//!
//! Invariants: parsing any string answers a duration or a `DurationError` naming the input,
//! never a panic; a duration parsed is at most `MAX_DURATION`; `format_duration` writes what
//! `parse_duration` reads back exactly, for every whole-millisecond duration in range.

mod fuzzing;

use std::time::Duration;

use durable_mcp::core::{MAX_DURATION, format_duration, parse_duration};
use proptest::prelude::*;

/// Strings near the grammar: digits, dots and units, with junk around them.
fn near_grammar() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9.]{0,24}(ms|s|m|h|d|S|M|µs|)",
        "[0-9]{0,20}\\.?[0-9]{0,20}[a-z ]{0,3}",
        "[ +\\-]?[0-9]{1,5}(ms|s|m|h|d)[0-9a-z]{0,3}",
    ]
}

#[test]
fn any_string_parses_or_is_refused_with_a_duration_error() {
    fuzzing::run("duration-parse", file!(), 4_000, near_grammar(), |text| {
        match std::panic::catch_unwind(|| parse_duration(&text)) {
            Ok(Ok(duration)) => {
                prop_assert!(duration <= MAX_DURATION, "{text:?} is {duration:?}");
                prop_assert_eq!(duration.subsec_nanos() % 1_000_000, 0);
            }
            Ok(Err(error)) => prop_assert_eq!(error.input, text),
            Err(_) => return Err(TestCaseError::fail(format!("{text:?} panicked"))),
        }
        Ok(())
    });
}

#[test]
fn a_formatted_duration_parses_back_to_itself() {
    let max = u64::try_from(MAX_DURATION.as_millis()).unwrap();
    let millis = prop_oneof![
        0..=max,
        0..100_000u64,
        (0..=max / 86_400_000).prop_map(|d| d * 86_400_000),
        (0..=max / 1000).prop_map(|s| s * 1000),
    ];
    fuzzing::run("duration-round-trip", file!(), 4_000, millis, |millis| {
        let duration = Duration::from_millis(millis);
        let text = format_duration(duration);
        prop_assert_eq!(parse_duration(&text), Ok(duration), "{}", text);
        Ok(())
    });
}
