// Checks: `#[step(crate = "..")]` makes the expansion name the runtime through that path.
mod support {
    pub use durable_mcp as runtime;
}

use futures_util::FutureExt;
use support::runtime::{StepError, step};

#[step(crate = "crate::support::runtime")]
async fn fetch() -> Result<u8, StepError> {
    Ok(1)
}

fn main() {
    assert_eq!(fetch().now_or_never(), Some(Ok(1)));
}
