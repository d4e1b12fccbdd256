//! Fuzz target: the attribute arguments of `#[mcp_task(...)]` and `#[step(...)]`, as
//! property tests (stable Rust, so they run in `cargo test`).
//!
//! Each case writes an argument list from the options both attributes know and the old
//! spellings they refuse (each with a value of a random kind: strings that are or are not
//! durations, integers, booleans, paths, nested lists), junk keys and junk tokens, and expands
//! it over a valid fn. Invariant: the expansion
//! never panics and is always a Rust file that parses: the expansion, or the user's item with
//! `compile_error!`s. `PROPTEST_CASES` sets the number of cases (`cargo xtask fuzz`); each
//! target reports `fuzz-target <name>: <executions> executions in <ms> ms` on stderr.

use std::cell::Cell;
use std::time::Instant;

use proc_macro2::TokenStream;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use quote::quote;

use crate::expand;

const KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "ttl",
    "poll_interval",
    "retry",
    "step_timeout",
    "timeout",
    "cleanup_timeout",
    // The old spelling of `retry`, refused with its new name (as is `timeout` on a task).
    "retries",
    "required",
    "optional",
    "annotations",
    "crate",
    "limit",
    "delay",
    "backoff",
    "max_delay",
    "jitter",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "unknown",
    "r#type",
    "_",
];

/// A literal or other value text.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &[
                "\"5m\"",
                "\"0ms\"",
                "\"1.5s\"",
                "\"forever\"",
                "\"100000001d\"",
                "\"\"",
                "\"-1s\"",
                "\"exponential\"",
                "\"linear\"",
                "\"sideways\"",
                "\"a name\"",
                "\"tool_name\"",
                "true",
                "false",
                "0",
                "5",
                "4294967296",
                "-1",
                "1.5",
                "'c'",
                "b\"x\"",
                "::durable_mcp",
                "crate::x",
                "r\"raw\"",
                "\"\\u{0}\"",
            ][..]
        )
        .prop_map(str::to_owned),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<String>().prop_map(|s| format!("{s:?}")),
        "[0-9]{1,6}(ms|s|m|h|d)".prop_map(|s| format!("{s:?}")),
    ]
}

/// One argument: `key = value`, `key`, `key(args)`, or junk.
fn argument() -> impl Strategy<Value = String> {
    let key = prop::sample::select(KEYS).prop_map(str::to_owned);
    let leaf = prop_oneof![
        4 => (key.clone(), value()).prop_map(|(k, v)| format!("{k} = {v}")),
        2 => key.clone(),
        1 => "[ -~]{0,12}",
    ];
    leaf.prop_recursive(2, 12, 4, move |inner| {
        (
            prop::sample::select(KEYS),
            prop::collection::vec(inner, 0..4),
        )
            .prop_map(|(k, args)| format!("{k}({})", args.join(", ")))
    })
}

fn arguments() -> impl Strategy<Value = String> {
    prop::collection::vec(argument(), 0..6).prop_map(|args| args.join(", "))
}

/// Runs one target, reporting its executions as `cargo xtask fuzz` reads them.
fn run(name: &str, default_cases: u32, test: impl Fn(TokenStream) -> TokenStream) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default_cases);
    let config = Config {
        cases,
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    };
    let executions = Cell::new(0u64);
    let started = Instant::now();
    let outcome = TestRunner::new(config).run(&arguments(), |text| {
        executions.set(executions.get() + 1);
        // Text that is no token stream (an unclosed string) never reaches a macro.
        let Ok(args) = text.parse::<TokenStream>() else {
            return Ok(());
        };
        let expanded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(args).to_string()))
                .map_err(|_| TestCaseError::fail(format!("expanding ({text}) panicked")))?;
        let parsed = syn::parse_str::<syn::File>(&expanded);
        prop_assert!(
            parsed.is_ok(),
            "({text}) expands to no Rust file: {expanded}"
        );
        Ok(())
    });
    eprintln!(
        "fuzz-target {name}: {} executions in {} ms",
        executions.get(),
        started.elapsed().as_millis()
    );
    if let Err(failure) = outcome {
        panic!("fuzz target {name} failed: {failure}");
    }
}

#[test]
fn any_mcp_task_arguments_expand_or_are_refused() {
    run("macro-mcp-task", 1500, |args| {
        expand::task(
            args,
            quote! {
                /// Doubles.
                async fn double(cx: &TaskContext, input: Numbers) -> Result<u64, TaskError> {
                    Ok(input.value * 2)
                }
            },
        )
    });
}

#[test]
fn any_step_arguments_expand_or_are_refused() {
    run("macro-step", 1500, |args| {
        expand::step(
            args,
            quote! {
                async fn fetch(url: String) -> Result<String, StepError> {
                    Ok(url)
                }
            },
        )
    });
}

/// `#[mcp_task(required())]` (and `optional()`) panicked inside darling's `Flag`; it is now
/// an error on the option, next to the user's fn.
#[test]
fn a_word_option_with_a_value_is_an_error_not_a_panic() {
    for args in [
        quote!(required()),
        quote!(optional()),
        quote!(optional(x)),
        quote!(required = true),
    ] {
        let expanded = expand::task(
            args.clone(),
            quote! {
                async fn double(input: u64) -> Result<u64, TaskError> { Ok(input * 2) }
            },
        )
        .to_string();
        assert!(expanded.contains("compile_error"), "{args}: {expanded}");
        assert!(expanded.contains("takes no value"), "{args}: {expanded}");
        syn::parse_str::<syn::File>(&expanded).expect("a Rust file");
    }
}
