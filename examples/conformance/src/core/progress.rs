//! `test_tool_with_progress` (`tools-call-with-progress`): three steps, 50 ms apart, each
//! reported as the task's status message (`0/100`, `50/100`, `100/100`).
//!
//! It is an optional task, so a client without the Tasks extension waits for the result
//! inline. durable-mcp reports progress only through task status, not as
//! `notifications/progress`, so a `progressToken` gets no notifications.

use std::time::Duration;

use durable_mcp::wire::CallToolResult;
use durable_mcp::{McpServer, TaskContext, TaskError};
use serde_json::Value;

use crate::tasks::task;

/// Adds the progress fixture to `server`.
pub fn add(server: McpServer) -> McpServer {
    server.task(
        task("test_tool_with_progress", |cx, _| {
            Box::pin(count_to_hundred(cx))
        })
        .optional()
        .description("Works in three steps, reporting progress out of 100 after each."),
    )
}

async fn count_to_hundred(cx: &TaskContext) -> Result<Value, TaskError> {
    cx.status("0/100").await;
    cx.sleep("first-half", Duration::from_millis(50)).await?;
    cx.status("50/100").await;
    cx.sleep("second-half", Duration::from_millis(50)).await?;
    cx.status("100/100").await;
    Ok(CallToolResult::text("finished in three steps").into_value())
}
