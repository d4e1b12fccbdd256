// Checks: a step name containing '#' (the journal's occurrence marker) is refused at the literal.
use durable_mcp::{StepError, step};

#[step(name = "fetch#1")]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
