//! The service's MCP tools: one task that shows whom it runs for.

use std::time::Duration;

use durable_mcp::{McpServer, StepError, TaskContext, TaskError, mcp_task, step};
use schemars::JsonSchema;
use serde::Deserialize;

/// What to be reminded of, and when.
#[derive(Deserialize, JsonSchema)]
struct Remind {
    /// The reminder's text.
    text: String,
    /// How many seconds from now (at most a day).
    seconds: u64,
}

/// Waits `seconds` durably (a restart of the service does not lose it), then answers with the
/// reminder, addressed to the user whose token started it.
#[mcp_task(ttl = "1d", poll_interval = "1s")]
async fn remind(cx: &TaskContext, input: Remind) -> Result<String, TaskError> {
    let user = cx.principal().unwrap_or("nobody in particular").to_owned();
    let note = compose(&user, &input.text).await?; // journaled
    cx.status(format!("reminding {user} in {} s", input.seconds))
        .await?;
    let seconds = input.seconds.min(24 * 60 * 60);
    cx.sleep("until", Duration::from_secs(seconds)).await?;
    Ok(note)
}

#[step]
async fn compose(user: &str, text: &str) -> Result<String, StepError> {
    Ok(format!("Reminder for {user}: {text}"))
}

/// The service's MCP server: the task tool `remind`.
pub fn server() -> McpServer {
    McpServer::new("axum-app", env!("CARGO_PKG_VERSION")).task(remind)
}
