// Checks: a step's output must be Serialize + DeserializeOwned (StepOutput): one error, at the
// output type, for both missing derives.
use durable_mcp::{StepError, step};

struct Report {
    _pages: u32,
}

#[step]
async fn fetch() -> Result<Report, StepError> {
    Ok(Report { _pages: 1 })
}

fn main() {}
