//! The duration grammar of the macros' options, checked at compile time.
//!
//! It is durable-mcp's one grammar (`durable_mcp::parse_duration` reads strings at run time):
//! a proc-macro crate cannot share code with the crate that uses it, so the grammar is written
//! here too, and both parsers are tested against one table of cases, `duration_cases.rs` in
//! this crate, which the workspace's tests run against the runtime's parser.

use proc_macro2::TokenStream;
use quote::quote;

/// `duration!("5m")`: the literal, checked now, as `Duration::from_millis(300000)` (no crate
/// path: the expansion names only `core`). A literal the grammar refuses is an error on it.
pub fn expand(input: TokenStream) -> TokenStream {
    let literal = match syn::parse2::<syn::LitStr>(input) {
        Ok(literal) => literal,
        Err(error) => {
            return syn::Error::new(
                error.span(),
                "duration! takes one string literal, checked at compile time: write \
                 `duration!(\"5m\")`; a string known only at run time goes to \
                 `durable_mcp::parse_duration` (or as a `&str` wherever a duration is taken)",
            )
            .to_compile_error();
        }
    };
    match parse_millis(&literal.value()) {
        Ok(millis) => quote!(::core::time::Duration::from_millis(#millis)),
        Err(message) => syn::Error::new(literal.span(), message).to_compile_error(),
    }
}

/// The latest time every host can store and schedule, in milliseconds since the epoch
/// (JavaScript's `Date` maximum, 100,000,000 days): the longest duration a literal may name.
const MAX_MILLIS: u64 = 8_640_000_000_000_000;

/// A duration literal, in whole milliseconds, or why it was refused. The message is the
/// runtime's, so that a literal and a string read at run time fail alike.
pub fn parse_millis(input: &str) -> Result<u64, String> {
    read(input).map_err(|reason| {
        format!(
            "invalid duration {input:?}: {reason}; write a number followed by ms, s, m, h or d \
             (\"250ms\", \"30s\", \"5m\", \"1h\", \"2d\") or plain milliseconds (\"1500\")"
        )
    })
}

fn read(input: &str) -> Result<u64, &'static str> {
    let number_len = input
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(input.len());
    let (number, unit) = input.split_at(number_len);
    if number.is_empty() {
        return Err("it does not start with a number");
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let unit_millis: u64 = match unit {
        "" if number.contains('.') => return Err("plain milliseconds must be an integer"),
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err("the unit is not one of ms, s, m, h, d"),
    };
    let dotted = number.contains('.');
    if whole.is_empty() || fraction.contains('.') || (dotted && fraction.is_empty()) {
        return Err("the number is malformed");
    }
    let whole: u64 = whole.parse().map_err(|_| "it is too large")?;
    // In u128, a u64 times a day's milliseconds cannot overflow.
    let mut millis = u128::from(whole) * u128::from(unit_millis);
    if !fraction.is_empty() {
        // The first nine fractional digits, rounded half up to the millisecond.
        let digits = &fraction[..fraction.len().min(9)];
        let scale = 10u128.pow(digits.len() as u32);
        let numerator: u128 = digits.parse::<u128>().map_err(|_| "it is too large")?;
        millis += (numerator * u128::from(unit_millis) * 2 + scale) / (scale * 2);
    }
    match u64::try_from(millis) {
        Ok(millis) if millis <= MAX_MILLIS => Ok(millis),
        Err(_) => Err("it is too large"),
        Ok(_) => Err(
            "it is longer than 100000000d (8640000000000000ms), the latest time every host can \
             store and schedule (JavaScript's Date maximum)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one table of duration cases (text, and the milliseconds it means or `None`).
    const DURATION_CASES: &[(&str, Option<u64>)] = include!("duration_cases.rs");

    #[test]
    fn the_macros_read_the_shared_table() {
        for (text, expected) in DURATION_CASES {
            assert_eq!(read(text).ok(), *expected, "case {text:?}");
        }
    }

    /// `duration!` reads the same table: each accepted text expands to its milliseconds, each
    /// refused one to a compile error.
    #[test]
    fn the_duration_macro_reads_the_shared_table() {
        for (text, expected) in DURATION_CASES {
            let expanded = expand(quote!(#text)).to_string();
            match expected {
                Some(millis) => assert_eq!(
                    expanded,
                    quote!(::core::time::Duration::from_millis(#millis)).to_string(),
                    "case {text:?}"
                ),
                None => assert!(
                    expanded.contains("compile_error") && expanded.contains("invalid duration"),
                    "case {text:?}: {expanded}"
                ),
            }
        }
    }

    #[test]
    fn the_duration_macro_takes_only_a_string_literal() {
        for input in [quote!(), quote!(5), quote!(pause), quote!("5m", "1s")] {
            let expanded = expand(input.clone()).to_string();
            assert!(
                expanded.contains("takes one string literal"),
                "{input}: {expanded}"
            );
        }
    }

    #[test]
    fn a_refusal_says_how_to_write_a_duration() {
        let message = parse_millis("5 minutes").unwrap_err();
        assert!(message.contains("\"5 minutes\""), "{message}");
        assert!(message.contains("\"30s\""), "{message}");
    }
}
