// Checks: a step output that is a tuple holding a type without serde derives is one error, at the output
// type, naming it (not serde's message for each of Serialize and Deserialize).
use durable_mcp::{StepError, step};

struct Report {
    _pages: u32,
}

#[step]
async fn fetch() -> Result<(Report, u32), StepError> {
    Ok((Report { _pages: 1 }, 2))
}

fn main() {}
