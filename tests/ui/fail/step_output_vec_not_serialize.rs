// Checks: a step output that is a `Vec` of a type without serde derives is one error, at the output
// type, naming it (not serde's message for each of Serialize and Deserialize).
use durable_mcp::{StepError, step};

struct Report {
    _pages: u32,
}

#[step]
async fn fetch() -> Result<Vec<Report>, StepError> {
    Ok(vec![Report { _pages: 1 }])
}

fn main() {}
