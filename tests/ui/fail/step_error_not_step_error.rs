// Checks: a #[step] fn's error type must be StepError (IsStepError), reported at the error type.
use durable_mcp::step;

#[derive(Debug)]
struct MyError;

#[step]
async fn fetch() -> Result<String, MyError> {
    Err(MyError)
}

fn main() {}
