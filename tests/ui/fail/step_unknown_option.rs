// Checks: an unknown #[step] option (a task-only one, `ttl`) is refused, listing the valid options.
use durable_mcp::{StepError, step};

#[step(ttl = "1h")]
async fn fetch() -> Result<String, StepError> {
    Ok(String::new())
}

fn main() {}
