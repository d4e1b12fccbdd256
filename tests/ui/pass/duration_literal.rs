// Checks: `duration!` expands to a `Duration` usable in a `const` and wherever a duration is
// taken, with the grammar's values.
use std::time::Duration;

use durable_mcp::testing::Harness;
use durable_mcp::{McpServer, TaskContext, TaskError, TaskStatus, duration, mcp_task};

const COOL_OFF: Duration = duration!("1.5s");

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn pause(cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    cx.sleep("pause", duration!("5m")).await?;
    cx.sleep("cool-off", COOL_OFF).await?;
    Ok(String::new())
}

fn main() {
    assert_eq!(COOL_OFF, Duration::from_millis(1500));
    assert_eq!(duration!("250ms"), Duration::from_millis(250));
    assert_eq!(duration!("2d"), Duration::from_secs(2 * 86_400));
    assert_eq!(duration!("1500"), Duration::from_millis(1500));
    assert_eq!(duration!("100000000d"), durable_mcp::MAX_DURATION);

    let server = McpServer::new("ui", "0").task(pause);
    let mut harness = Harness::new(&server);
    let id = harness.create("pause", serde_json::json!({}));
    harness.advance(duration!("5m"));
    assert_eq!(harness.status(&id), TaskStatus::Working);
    harness.advance(COOL_OFF);
    assert_eq!(harness.status(&id), TaskStatus::Completed);
}
