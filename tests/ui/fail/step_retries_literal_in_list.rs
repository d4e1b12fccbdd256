// Checks: `retries(3)` is refused with what to write: `retries(limit = 3)`.
use durable_mcp::{StepError, step};

#[step(retries(3))]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
