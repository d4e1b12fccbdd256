//! Expansion snapshots: each case runs `expand` on tokens built with `quote!`, formats the
//! output with prettyplease and compares it with a file under `tests/snapshots/`. After a
//! deliberate change to the expansion, run `UPDATE_EXPECT=1 cargo test -p durable-mcp-macros`
//! and review the diff of the snapshots like code.

use expect_test::{ExpectFile, expect_file};
use proc_macro2::TokenStream;
use quote::quote;

use crate::expand;

/// The expansion as a reader sees it. Panics if it is not a valid Rust file: every
/// expansion, failing ones included, must parse.
fn pretty(tokens: TokenStream) -> String {
    let file = syn::parse2::<syn::File>(tokens.clone())
        .unwrap_or_else(|error| panic!("the expansion does not parse ({error}):\n{tokens}"));
    prettyplease::unparse(&file)
}

fn check(expanded: TokenStream, snapshot: ExpectFile) {
    snapshot.assert_eq(&pretty(expanded));
}

#[test]
fn minimal_task() {
    let expanded = expand::task(
        quote!(),
        quote! {
            /// Doubles every number.
            async fn double_all(cx: &TaskContext, input: Numbers) -> Result<Json<Vec<u64>>, TaskError> {
                let mut doubled = Vec::new();
                for value in input.values {
                    doubled.push(double(value).await?);
                }
                Ok(Json(doubled))
            }
        },
    );
    check(expanded, expect_file!["../tests/snapshots/task_minimal.rs"]);
}

#[test]
fn task_with_every_option() {
    let expanded = expand::task(
        quote! {
            name = "send-report",
            title = "Send a report",
            description = "Fetches the report and sends it.",
            ttl = "1h",
            poll_interval = "2s",
            retry(limit = 5, delay = "1s", backoff = "exponential", max_delay = "1m", jitter = false),
            step_timeout = "30s",
            cleanup_timeout = "2m",
            optional,
            annotations(read_only = false, destructive = false, idempotent = true, open_world = true),
            scopes = ["reports:write", "mcp"],
            crate = ::my_framework::durable_mcp,
        },
        quote! {
            /// This doc comment stays on the tool fn; `description` wins for the tool.
            #[allow(clippy::needless_pass_by_value)]
            pub(crate) async fn send_report(
                cx: &TaskContext,
                input: Report,
            ) -> Result<String, TaskError> {
                cx.sleep("cool-off", "5s").await?;
                Ok(format!("sent {}", input.name))
            }
        },
    );
    check(expanded, expect_file!["../tests/snapshots/task_full.rs"]);
}

#[test]
fn task_without_context() {
    let expanded = expand::task(
        quote!(required, ttl = "forever"),
        quote! {
            /// Places an order.
            ///
            /// The order is kept forever.
            pub async fn place_order(input: Order) -> Result<CallToolResult, TaskError> {
                Ok(CallToolResult::text(input.summary()))
            }
        },
    );
    check(
        expanded,
        expect_file!["../tests/snapshots/task_without_context.rs"],
    );
}

#[test]
fn minimal_step() {
    let expanded = expand::step(
        quote!(),
        quote! {
            /// Doubles a number.
            async fn double(n: u64) -> Result<u64, StepError> {
                Ok(n * 2)
            }
        },
    );
    check(expanded, expect_file!["../tests/snapshots/step_minimal.rs"]);
}

#[test]
fn step_with_every_option() {
    let expanded = expand::step(
        quote! {
            name = "send-mail",
            retry(limit = 4, delay = "2s", backoff = "linear", max_delay = "10s", jitter = true),
            timeout = "15s",
            crate = ::my_framework::durable_mcp,
        },
        quote! {
            /// Sends one mail; the receipt is journaled.
            #[must_use = "a step that is not awaited does not run"]
            pub async fn send_mail(to: &str, mut attempts: u32, body: String) -> Result<Receipt, StepError> {
                attempts += 1;
                Ok(Receipt::new(to, attempts, body))
            }
        },
    );
    check(expanded, expect_file!["../tests/snapshots/step_full.rs"]);
}

#[test]
fn a_failing_expansion_still_emits_the_item() {
    // Two mistakes, reported together; the fn itself is emitted unchanged so that the code
    // around it (and an IDE) still sees it.
    let expanded = expand::task(
        quote!(ttl = "soon"),
        quote! {
            /// Not async.
            fn not_async(input: Order) -> Result<String, TaskError> {
                Ok(input.summary())
            }
        },
    );
    check(expanded, expect_file!["../tests/snapshots/task_error.rs"]);
}

#[test]
fn minimal_tool() {
    let expanded = crate::tool::expand(
        quote!(),
        quote! {
            /// Adds two numbers.
            async fn add(input: Pair) -> Json<Sum> {
                Json(Sum { sum: input.a + input.b })
            }
        },
    );
    check(expanded, expect_file!["../tests/snapshots/tool_minimal.rs"]);
}

#[test]
fn tool_with_every_option() {
    let expanded = crate::tool::expand(
        quote! {
            name = "is-prime",
            title = "Is it prime?",
            description = "Tells whether a number is prime.",
            annotations(read_only, idempotent = true, open_world = false),
            scopes = ["math"],
            crate = ::my_framework::durable_mcp,
        },
        quote! {
            pub async fn is_prime(call: &ToolCall, input: Candidate) -> Result<Json<Verdict>, String> {
                call.notify.progress(1.0, None, None);
                Ok(Json(Verdict { prime: check(input.n) }))
            }
        },
    );
    check(expanded, expect_file!["../tests/snapshots/tool_full.rs"]);
}

#[test]
fn a_failing_task_names_the_crate_it_was_given() {
    // The stand-in's `TaskTool` goes through `crate = ..` although another option fails: in a
    // crate that only reaches durable-mcp through a re-export, `::durable_mcp` would be a
    // second error.
    let expanded = expand::task(
        quote!(crate = reexport::durable_mcp, ttl = "soon"),
        quote! {
            async fn work(input: Order) -> Result<String, TaskError> {
                Ok(input.summary())
            }
        },
    );
    check(
        expanded,
        expect_file!["../tests/snapshots/task_error_crate.rs"],
    );
}

#[test]
fn retry_without_its_list_says_what_to_write() {
    for (args, suggestion) in [
        (quote!(retry = 3), "`retry(limit = 3)`"),
        (quote!(retry(3)), "`retry(limit = 3)`"),
        (quote!(retry = "3"), "`retry(limit = 5, delay = \"1s\")`"),
        (quote!(retry = true), "`retry(limit = 5, delay = \"1s\")`"),
        (quote!(retry), "`retry(limit = 5, delay = \"1s\")`"),
        (quote!(retry = limit), "`retry(limit = 5, delay = \"1s\")`"),
    ] {
        for expanded in [
            expand::task(
                args.clone(),
                quote!(
                    async fn work(input: Order) -> Result<String, TaskError> {
                        todo!()
                    }
                ),
            ),
            expand::step(
                args.clone(),
                quote!(
                    async fn fetch() -> Result<String, StepError> {
                        todo!()
                    }
                ),
            ),
        ] {
            let message = error_messages(expanded)
                .into_iter()
                .next()
                .unwrap_or_default();
            assert!(message.contains("`retry` takes"), "{args}: {message}");
            assert!(message.contains(suggestion), "{args}: {message}");
        }
    }
}

/// The old spellings `retries` (both attributes) and `timeout` (`#[mcp_task]` only) are
/// refused with their new names and what to write, and nothing else is reported for them.
#[test]
fn the_old_spellings_are_refused_with_their_new_names() {
    let task = |args: TokenStream| {
        expand::task(
            args,
            quote!(
                async fn work(input: Order) -> Result<String, TaskError> {
                    todo!()
                }
            ),
        )
    };
    let step = |args: TokenStream| {
        expand::step(
            args,
            quote!(
                async fn fetch() -> Result<String, StepError> {
                    todo!()
                }
            ),
        )
    };
    for (expanded, said) in [
        (
            task(quote!(timeout = "45s")),
            "`timeout` is renamed `step_timeout`: it is the timeout of each step of the task \
             (write `step_timeout = \"45s\"`)",
        ),
        (
            task(quote!(timeout = 30)),
            "(write `step_timeout = \"30s\"`)",
        ),
        (
            task(quote!(retries(limit = 3, delay = "1s", jitter))),
            "`retries` is renamed `retry`, as in `TaskDefinition::retry`: it is the retry policy \
             of the task's steps (write `retry(limit = 3, delay = \"1s\", jitter)`)",
        ),
        (
            step(quote!(retries = 3)),
            "`retries` is renamed `retry`, as in `Step::retry`: it is the retry policy of this \
             step (write `retry(limit = 3)`)",
        ),
        (step(quote!(retries(3))), "(write `retry(limit = 3)`)"),
        (
            step(quote!(retries)),
            "(write `retry(limit = 5, delay = \"1s\")`)",
        ),
    ] {
        let messages = error_messages(expanded);
        assert!(
            messages.len() == 1 && messages[0].ends_with(said),
            "{said}: {messages:?}"
        );
    }
    // `timeout` stays the option of a step; `step_timeout` is the task's.
    assert!(error_messages(step(quote!(timeout = "10s"))).is_empty());
    let messages = error_messages(step(quote!(step_timeout = "10s")));
    assert!(
        messages[0].starts_with("unknown option `step_timeout` of #[step]"),
        "{messages:?}"
    );
}

#[test]
fn a_scope_that_is_no_oauth_scope_is_refused_at_the_literal() {
    for (args, said) in [
        (quote!(scopes = ["two words"]), "is not an OAuth scope"),
        (quote!(scopes = [""]), "is not an OAuth scope"),
        (quote!(scopes = ["a", "a"]), "is listed twice"),
    ] {
        for expanded in [
            expand::task(
                args.clone(),
                quote!(
                    async fn work(input: Order) -> Result<String, TaskError> {
                        todo!()
                    }
                ),
            ),
            crate::tool::expand(
                args.clone(),
                quote!(
                    async fn add(input: Pair) -> Json<Sum> {
                        todo!()
                    }
                ),
            ),
        ] {
            let messages = error_messages(expanded);
            assert!(
                messages.iter().any(|message| message.contains(said)),
                "{args}: {messages:?}"
            );
        }
    }
}

/// The messages of the `compile_error!`s an expansion holds, in order.
fn error_messages(expanded: TokenStream) -> Vec<String> {
    syn::parse2::<syn::File>(expanded)
        .expect("a Rust file")
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Macro(error) => error.mac.parse_body::<syn::LitStr>().ok(),
            _ => None,
        })
        .map(|message| message.value())
        .collect()
}
