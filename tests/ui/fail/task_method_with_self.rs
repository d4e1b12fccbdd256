// Checks: #[mcp_task] on a method is refused at `self`: tasks are free fns.
use durable_mcp::{TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

struct Service;

impl Service {
    #[mcp_task]
    async fn work(&self, _input: Input) -> Result<String, TaskError> {
        Ok(String::new())
    }
}

fn main() {}
