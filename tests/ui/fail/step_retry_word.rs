// Checks: `retry` written alone is refused with an example of its list and its fields.
use durable_mcp::{StepError, step};

#[step(retry)]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
