// Checks: a duration written as a number (`timeout = 30`) is refused at the literal.
use durable_mcp::{StepError, step};

#[step(timeout = 30)]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
