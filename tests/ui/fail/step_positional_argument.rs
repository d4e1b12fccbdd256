// Checks: a bare literal instead of `option = value` is refused, listing the valid options.
use durable_mcp::{StepError, step};

#[step("fetch")]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
