// Checks: a #[step] fn must return `Result<T, StepError>`; a bare `String` is refused at the type.
use durable_mcp::step;

#[step]
async fn fetch() -> String {
    String::new()
}

fn main() {}
