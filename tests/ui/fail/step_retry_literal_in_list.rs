// Checks: `retry(3)` is refused with what to write: `retry(limit = 3)`.
use durable_mcp::{StepError, step};

#[step(retry(3))]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
