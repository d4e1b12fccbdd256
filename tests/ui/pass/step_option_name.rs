// Checks: `#[step(name = "..")]` compiles; outside a task the step simply runs.
use durable_mcp::{StepError, step};
use futures_util::FutureExt;

#[step(name = "fetch-report")]
async fn fetch() -> Result<String, StepError> {
    Ok("report".to_owned())
}

fn main() {
    assert_eq!(fetch().now_or_never(), Some(Ok("report".to_owned())));
}
