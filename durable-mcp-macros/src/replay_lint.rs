//! Calls in a `#[mcp_task]` body that read a fresh value on every replay (clocks, random
//! sources), found by their path outside the closures of steps and compensations. Each becomes
//! a warning at the call that says what to use instead; `#[allow(deprecated)]` on the fn
//! silences it.
//!
//! A proc macro cannot emit a warning of its own on stable Rust, so each finding is the use of
//! a `#[deprecated]` constant, spanned at the call: rustc reports it as a warning there, with
//! the note as its text.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;

/// The calls looked for, by the last two segments of their path, and what replays instead.
const CALLS: [(&str, &str, &str); 12] = [
    ("SystemTime", "now", "cx.now()"),
    ("Instant", "now", "cx.now()"),
    ("Utc", "now", "cx.now()"),
    ("Local", "now", "cx.now()"),
    ("OffsetDateTime", "now_utc", "cx.now()"),
    ("rand", "random", RANDOM),
    ("rand", "rng", RANDOM),
    ("rand", "thread_rng", RANDOM),
    ("getrandom", "fill", RANDOM),
    ("getrandom", "getrandom", RANDOM),
    ("Uuid", "new_v4", "cx.uuid()"),
    ("Uuid", "now_v7", "cx.uuid()"),
];

const RANDOM: &str = "cx.random_u64(), cx.random_f64() or cx.random_range(..)";

/// The methods whose arguments run outside the body's replay: a step's closure and a
/// compensation are recorded, not replayed.
const OUTSIDE_REPLAY: [&str; 2] = ["step", "on_cancel"];

/// One statement per call found in `body`, each a warning at the call.
pub fn warnings(body: &syn::Block) -> Vec<syn::Stmt> {
    let mut found = Vec::new();
    scan(body.to_token_stream(), &mut found);
    found
        .into_iter()
        .map(|(span, call, instead)| warning(span, &call, instead))
        .collect()
}

/// Collects the calls of [`CALLS`] in `stream`, skipping the arguments of `.step(..)` and
/// `.on_cancel(..)`.
fn scan(stream: TokenStream, found: &mut Vec<(Span, String, &'static str)>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut index = 0;
    while index < tokens.len() {
        match &tokens[index] {
            TokenTree::Ident(_) if runs_outside_replay(&tokens, index) => {
                // The method's name, then its parenthesised arguments.
                index += 2;
                continue;
            }
            TokenTree::Ident(first) => {
                if let Some((call, instead)) = call_at(&tokens, index) {
                    found.push((first.span(), call, instead));
                }
            }
            TokenTree::Group(group) => scan(group.stream(), found),
            _ => {}
        }
        index += 1;
    }
}

/// Whether the identifier at `index` is a method of [`OUTSIDE_REPLAY`] called with `.name(`.
fn runs_outside_replay(tokens: &[TokenTree], index: usize) -> bool {
    let TokenTree::Ident(name) = &tokens[index] else {
        return false;
    };
    let after_dot =
        index > 0 && matches!(&tokens[index - 1], TokenTree::Punct(p) if p.as_char() == '.');
    let called = matches!(
        tokens.get(index + 1),
        Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Parenthesis
    );
    after_dot && called && OUTSIDE_REPLAY.iter().any(|method| name == method)
}

/// The call of [`CALLS`] whose path has its second-to-last segment at `index`, if any.
fn call_at(tokens: &[TokenTree], index: usize) -> Option<(String, &'static str)> {
    let [
        TokenTree::Ident(first),
        TokenTree::Punct(colon),
        TokenTree::Punct(_),
        TokenTree::Ident(second),
    ] = tokens.get(index..index + 4)?
    else {
        return None;
    };
    if colon.as_char() != ':' {
        return None;
    }
    CALLS
        .iter()
        .find(|(module, function, _)| first == *module && second == *function)
        .map(|(module, function, instead)| (format!("{module}::{function}()"), *instead))
}

/// The use of a deprecated constant at `span`, whose note says what replays instead.
fn warning(span: Span, call: &str, instead: &str) -> syn::Stmt {
    let note = format!(
        "`{call}` in a task body gives another value on every replay, so the body can take \
         another path when it runs again; use `{instead}`, which the journal records (inside a \
         step's closure it is fine: the step's result is what is recorded)"
    );
    let use_site = syn::Ident::new("nondeterministic_in_task_body", span);
    syn::parse_quote! {
        {
            #[deprecated(note = #note)]
            #[allow(non_upper_case_globals)]
            const nondeterministic_in_task_body: () = ();
            let _ = #use_site;
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::warnings;

    fn found(body: proc_macro2::TokenStream) -> usize {
        warnings(&syn::parse_quote!({ #body })).len()
    }

    #[test]
    fn clock_and_random_calls_outside_steps_are_found() {
        assert_eq!(found(quote!(let t = std::time::SystemTime::now();)), 1);
        assert_eq!(
            found(quote!(let n: u8 = rand::random(); let u = Uuid::new_v4();)),
            2
        );
        assert_eq!(
            found(quote!(if x {
                Instant::now();
            } else {
                chrono::Utc::now();
            })),
            2
        );
    }

    #[test]
    fn calls_inside_step_and_compensation_closures_are_not() {
        let body = quote! {
            let a = cx.step("a", || async { Ok(SystemTime::now()) }).await?;
            cx.on_cancel("undo", move || async move { Ok(rand::random::<u8>()) });
            let b = cx.step("b", || async { Ok(1) }).retry(policy).await?;
        };
        assert_eq!(found(body), 0);
        assert_eq!(found(quote!(let now = cx.now(); let step = SystemTime;)), 0);
    }
}
