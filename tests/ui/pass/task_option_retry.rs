// Checks: `retry(..)` with every field sets the task's default step retry policy.
use std::time::Duration;

use durable_mcp::Backoff;
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(retry(
    limit = 7,
    delay = "250ms",
    backoff = "linear",
    max_delay = "1m",
    jitter = false
))]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let server = McpServer::new("ui", "0").task(work);
    let registry = server.task_registry();
    let retry = registry.get("work").unwrap().task_options().retry;
    assert_eq!(retry.limit, 7);
    assert_eq!(retry.delay, Duration::from_millis(250));
    assert!(matches!(retry.backoff, Backoff::Linear));
    assert_eq!(retry.max_delay, Duration::from_secs(60));
    assert!(!retry.jitter);
}
