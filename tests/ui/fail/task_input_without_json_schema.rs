// Checks: the input type must implement JsonSchema (TaskInput), reported at the input type.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize)]
struct Input {}

#[mcp_task]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
