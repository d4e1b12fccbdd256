//! Checks: expansions of both macros compile under strict rustc lints, denied. (trybuild runs
//! rustc only; clippy pedantic is covered by the `macro-lints` example crate.)
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused,
    unused_qualifications,
    unused_results,
    unused_lifetimes,
    unused_extern_crates,
    unused_import_braces,
    rust_2018_idioms,
    unreachable_pub,
    unsafe_code,
    single_use_lifetimes,
    trivial_casts,
    trivial_numeric_casts,
    let_underscore_drop,
    redundant_lifetimes,
    unit_bindings,
    unnameable_types,
    nonstandard_style,
    future_incompatible
)]

use durable_mcp::wire::Json;
use durable_mcp::{McpServer, StepError, TaskContext, TaskError, duration, mcp_task, step};

/// The tools of this binary.
pub mod tools {
    use super::{Json, StepError, TaskContext, TaskError, duration, mcp_task, step};

    /// What to count.
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    pub struct Input {
        /// Up to where.
        pub to: u32,
    }

    /// Counts one more.
    #[step(retry(limit = 2), timeout = "1s")]
    pub async fn next(n: u32) -> Result<u32, StepError> {
        Ok(n + 1)
    }

    /// Counts up with a step each.
    #[mcp_task(ttl = "1h", annotations(read_only))]
    pub async fn count(cx: &TaskContext, input: Input) -> Result<Json<u32>, TaskError> {
        let mut n = 0;
        while n < input.to {
            n = next(n).await?;
        }
        cx.sleep("rest", duration!("1s")).await?;
        Ok(Json(n))
    }

    /// Counts without a context.
    #[mcp_task(name = "count-quick", optional)]
    pub async fn count_quick(input: Input) -> Result<String, TaskError> {
        Ok(input.to.to_string())
    }
}

fn main() {
    let server = McpServer::new("ui", "0")
        .task(tools::count)
        .task(tools::count_quick);
    assert_eq!(server.tool_names(), ["count", "count-quick"]);
}
