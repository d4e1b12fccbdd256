// Checks: a #[tool] goes on a free fn, not a method.
use durable_mcp::tool;

struct Greeter;

impl Greeter {
    #[tool]
    async fn hello(&self) -> String {
        String::new()
    }
}

fn main() {}
