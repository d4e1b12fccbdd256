// Checks: a #[step] parameter must be a plain name; a tuple pattern is refused at the pattern.
use durable_mcp::{StepError, step};

#[step]
async fn add((a, b): (u32, u32)) -> Result<u32, StepError> {
    Ok(a + b)
}

fn main() {}
