//! The duration grammar (`core::parse_duration`, `core::format_duration`): the table of cases
//! it shares with the macros' compile-time parser, then fuzzed.
//!
//! Invariants: parsing any string answers a duration or a `DurationError` naming the input,
//! never a panic; a duration parsed is at most `MAX_DURATION`; `format_duration` writes what
//! `parse_duration` reads back exactly, for every whole-millisecond duration in range.

mod fuzzing;

use std::time::Duration;

use durable_mcp::{MAX_DURATION, format_duration, parse_duration};
use proptest::prelude::*;

/// The one table of cases, which the macros crate's own tests run against its parser.
const DURATION_CASES: &[(&str, Option<u64>)] =
    include!("../../durable-mcp-macros/src/duration_cases.rs");

#[test]
fn the_runtime_reads_the_table_it_shares_with_the_macros() {
    for (text, expected) in DURATION_CASES {
        let parsed = parse_duration(text).ok().map(|d| d.as_millis());
        assert_eq!(parsed, expected.map(u128::from), "case {text:?}");
    }
}

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
