//! `test_tool_with_progress` (`tools-call-with-progress`): three steps, 50 ms apart, each
//! reported as the task's status message (`0/100`, `50/100`, `100/100`).
//!
//! It is an optional task, so a client without the Tasks extension waits for the result
//! inline; with a `progressToken`, the call answers on a stream that carries each new status
//! message as a `notifications/progress`.

use std::time::Duration;

use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

use crate::tasks::NoArguments;

/// Adds the progress fixture to `server`.
pub fn add(server: McpServer) -> McpServer {
    server.task(test_tool_with_progress)
}

/// Works in three steps, reporting progress out of 100 after each.
#[mcp_task(optional, ttl = "1h", poll_interval = "200ms")]
async fn test_tool_with_progress(
    cx: &TaskContext,
    _input: NoArguments,
) -> Result<String, TaskError> {
    cx.status("0/100").await?;
    cx.sleep("first-half", Duration::from_millis(50)).await?;
    cx.status("50/100").await?;
    cx.sleep("second-half", Duration::from_millis(50)).await?;
    cx.status("100/100").await?;
    Ok("finished in three steps".to_owned())
}
