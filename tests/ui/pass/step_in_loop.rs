// Checks: a step called in a loop of a task, with `?` converting its StepError into the
// task's TaskError; the task runs to completion through the harness.
use durable_mcp::TaskStatus;
use durable_mcp::testing::Harness;
use durable_mcp::wire::Json;
use durable_mcp::{McpServer, StepError, TaskContext, TaskError, mcp_task, step};

#[step]
async fn square(n: u64) -> Result<u64, StepError> {
    Ok(n * n)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {
    values: Vec<u64>,
}

#[mcp_task]
async fn squares(_cx: &TaskContext, input: Input) -> Result<Json<Vec<u64>>, TaskError> {
    let mut squared = Vec::new();
    for value in input.values {
        squared.push(square(value).await?);
    }
    Ok(Json(squared))
}

fn main() {
    let server = McpServer::new("ui", "0").task(squares);
    let mut harness = Harness::new(&server);
    let id = harness.create("squares", serde_json::json!({ "values": [1, 2, 3] }));
    harness.run_until_idle();
    assert_eq!(harness.status(&id), TaskStatus::Completed);
    let result = harness.result(&id).unwrap();
    assert_eq!(result["structuredContent"], serde_json::json!([1, 4, 9]));
}
