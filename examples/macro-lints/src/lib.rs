//! Expansions of `#[mcp_task]` and `#[step]` under `clippy::pedantic` and the workspace lints
//! (`missing_docs`, `missing_debug_implementations`, `rust_2018_idioms`, ...). Nothing runs
//! here: the workspace's `cargo clippy --all-targets -- -D warnings` compiles this library, so
//! a lint that fires on generated code fails that run. The code is written the way a careful
//! user would write it, so any warning comes from an expansion.
#![warn(clippy::pedantic)]

use durable_mcp::wire::Json;
use durable_mcp::{McpServer, StepError, TaskContext, TaskError, duration, mcp_task, step};
use serde::{Deserialize, Serialize};

/// What to count.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CountInput {
    /// Up to where.
    pub to: u32,
    /// A label for the result.
    pub label: String,
}

/// One counted value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counted {
    /// The label.
    pub label: String,
    /// The value reached.
    pub value: u32,
}

/// Adds one, journaled.
///
/// # Errors
///
/// Never; a step's signature returns a `Result` all the same.
#[step(retry(
    limit = 3,
    delay = "1s",
    backoff = "exponential",
    max_delay = "1m",
    jitter = true
))]
pub async fn increment(n: u32) -> Result<u32, StepError> {
    Ok(n + 1)
}

/// Labels a value, borrowing the label.
///
/// # Errors
///
/// Fails for good on an empty label.
#[step(name = "label", timeout = "5s")]
pub async fn label(label: &str, value: u32) -> Result<Counted, StepError> {
    if label.is_empty() {
        return Err(StepError::non_retryable("the label is empty"));
    }
    Ok(Counted {
        label: label.to_owned(),
        value,
    })
}

/// Counts up to `to`, one journaled step at a time, resting once at the end.
#[mcp_task(
    title = "Count",
    ttl = "1h",
    poll_interval = "1s",
    step_timeout = "30s",
    retry(limit = 2),
    annotations(read_only, idempotent, destructive = false, open_world = false)
)]
pub async fn count(cx: &TaskContext, input: CountInput) -> Result<Json<Counted>, TaskError> {
    let mut value = 0;
    while value < input.to {
        value = increment(value).await?;
    }
    cx.sleep("rest", duration!("1s")).await?;
    Ok(Json(label(&input.label, value).await?))
}

/// Echoes the label, without a context.
#[mcp_task(name = "echo-label", ttl = "forever", optional)]
pub async fn echo_label(input: CountInput) -> Result<String, TaskError> {
    Ok(input.label)
}

/// The server with both tasks.
#[must_use]
pub fn server() -> McpServer {
    McpServer::new("macro-lints", "0")
        .task(count)
        .task(echo_label)
}
