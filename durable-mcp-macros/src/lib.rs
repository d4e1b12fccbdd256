//! The attribute macros of durable-mcp: `#[mcp_task]` and `#[step]`. Use them through
//! `durable_mcp`, which re-exports both and documents them.
//!
//! Each entry point converts to `proc_macro2`, calls an `expand` that returns a
//! `syn::Result`, and turns errors into `compile_error!` next to the user's item, so that one
//! mistake gives one error.

mod args;
mod duration;
mod expand;
mod model;
#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Turns an `async fn(cx: &TaskContext, input: T) -> Result<R, E>` into a durable MCP task
/// tool. See `durable_mcp::mcp_task` for the options and an example.
#[proc_macro_attribute]
pub fn mcp_task(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::task(args.into(), item.into()).into()
}

/// Turns an `async fn(..) -> Result<T, StepError>` into a journaled step. See
/// `durable_mcp::step` for the options and an example.
#[proc_macro_attribute]
pub fn step(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::step(args.into(), item.into()).into()
}
