//! The macros of durable-mcp: the attributes `#[mcp_task]`, `#[tool]` and `#[step]`, and
//! `duration!`. Use them through `durable_mcp`, which re-exports and documents them.
//!
//! Each entry point converts to `proc_macro2`, calls an `expand` that returns a
//! `syn::Result`, and turns errors into `compile_error!` next to the user's item, so that one
//! mistake gives one error.

mod args;
mod duration;
mod expand;
#[cfg(test)]
mod fuzz;
mod model;
mod replay_lint;
#[cfg(test)]
mod tests;
mod tool;

use proc_macro::TokenStream;

// Documented on its re-export in durable-mcp (rustdoc would append docs written here).
#[allow(missing_docs)]
#[proc_macro_attribute]
pub fn mcp_task(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::task(args.into(), item.into()).into()
}

// Documented on its re-export in durable-mcp (rustdoc would append docs written here).
#[allow(missing_docs)]
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}

// Documented on its re-export in durable-mcp (rustdoc would append docs written here).
#[allow(missing_docs)]
#[proc_macro_attribute]
pub fn step(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::step(args.into(), item.into()).into()
}

// Documented on its re-export in durable-mcp (rustdoc would append docs written here).
#[allow(missing_docs)]
#[proc_macro]
pub fn duration(input: TokenStream) -> TokenStream {
    duration::expand(input.into()).into()
}
