// Checks: `retry = 3` is refused: retry takes a list, `retry(limit = 3)`.
use durable_mcp::{StepError, step};

#[step(retry = 3)]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
