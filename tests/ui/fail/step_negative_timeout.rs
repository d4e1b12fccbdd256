// Checks: `timeout = "-1s"` is refused at the literal.
use durable_mcp::{StepError, step};

#[step(timeout = "-1s")]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
