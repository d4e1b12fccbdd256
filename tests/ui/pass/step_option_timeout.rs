// Checks: `#[step(timeout = "..")]` compiles, with surrounding whitespace in the literal too.
use durable_mcp::{StepError, step};
use futures_util::FutureExt;

#[step(timeout = "90s")]
async fn fetch() -> Result<bool, StepError> {
    Ok(true)
}

#[step(timeout = " 10s ")]
async fn padded() -> Result<bool, StepError> {
    Ok(true)
}

fn main() {
    assert_eq!(fetch().now_or_never(), Some(Ok(true)));
    assert_eq!(padded().now_or_never(), Some(Ok(true)));
}
