// Checks: `retry(limit = 0)` is refused: the limit counts attempts and is at least 1.
use durable_mcp::{StepError, step};

#[step(retry(limit = 0))]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
