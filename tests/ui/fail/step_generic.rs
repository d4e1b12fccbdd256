// Checks: a generic #[step] fn is refused at its generics.
use durable_mcp::{StepError, step};

#[step]
async fn fetch<T: ToString>(value: T) -> Result<String, StepError> {
    Ok(value.to_string())
}

fn main() {}
