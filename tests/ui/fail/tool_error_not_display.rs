// Checks: the error type implements Display, said at the return type.
use durable_mcp::tool;

#[derive(Debug)]
struct Oops;

#[tool]
async fn hello() -> Result<String, Oops> {
    Err(Oops)
}

fn main() {}
