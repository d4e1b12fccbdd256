// Checks: a #[mcp_task] fn takes an input; one without parameters is refused.
use durable_mcp::{TaskError, mcp_task};

#[mcp_task]
async fn work() -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {}
