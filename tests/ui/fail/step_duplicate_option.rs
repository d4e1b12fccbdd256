// Checks: an option given twice is refused at the second occurrence.
use durable_mcp::{StepError, step};

#[step(timeout = "1s", timeout = "2s")]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
