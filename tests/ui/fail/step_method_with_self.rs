// Checks: #[step] on a method is refused at `self`: steps are free fns.
use durable_mcp::{StepError, step};

struct Client;

impl Client {
    #[step]
    async fn fetch(&self) -> Result<String, StepError> {
        Ok(String::new())
    }
}

fn main() {}
