// Checks: `#[step(retry(..))]` with every field compiles.
use durable_mcp::{StepError, step};
use futures_util::FutureExt;

#[step(retry(
    limit = 3,
    delay = "2s",
    backoff = "exponential",
    max_delay = "1h",
    jitter = true
))]
async fn fetch() -> Result<u32, StepError> {
    Ok(7)
}

#[step(retry(backoff = "constant"))]
async fn constant() -> Result<u32, StepError> {
    Ok(1)
}

fn main() {
    assert_eq!(fetch().now_or_never(), Some(Ok(7)));
    assert_eq!(constant().now_or_never(), Some(Ok(1)));
}
