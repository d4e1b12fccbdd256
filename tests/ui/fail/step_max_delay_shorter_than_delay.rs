// Checks: `max_delay` shorter than `delay` is refused at `max_delay`'s literal.
use durable_mcp::{StepError, step};

#[step(retry(delay = "10s", max_delay = "5s"))]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
