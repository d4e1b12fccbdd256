// Checks: a #[step] fn must be `async`; the error points at `fn` and shows the expected shape.
use durable_mcp::{StepError, step};

#[step]
fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
