// Checks: a generic #[mcp_task] fn is refused at its generics.
use durable_mcp::{TaskContext, TaskError, mcp_task};

#[mcp_task]
async fn work<T: serde::de::DeserializeOwned + schemars::JsonSchema>(
    _cx: &TaskContext,
    _input: T,
) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
