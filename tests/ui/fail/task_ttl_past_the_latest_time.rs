// Checks: a duration longer than 100000000d (the latest time every host can store, JavaScript's
// Date maximum, counted from the epoch) is refused at the literal.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(ttl = "100000001d")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
