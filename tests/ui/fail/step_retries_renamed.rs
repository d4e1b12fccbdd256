// Checks: the old spelling `retries` of #[step] is refused at the option with its new name,
// `retry`; `retries = 3` suggests `retry(limit = 3)`.
use durable_mcp::{StepError, step};

#[step(retries = 3)]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
