// Checks: an unknown backoff is refused at the literal, naming the valid ones.
use durable_mcp::{StepError, step};

#[step(retry(backoff = "fibonacci"))]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
