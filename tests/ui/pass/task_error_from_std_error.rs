// Checks: a task's error may be any std::error::Error, which converts into a TaskError.
use durable_mcp::{McpServer, TaskContext, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {
    number: String,
}

#[mcp_task]
async fn parse(_cx: &TaskContext, input: Input) -> Result<String, std::num::ParseIntError> {
    Ok(input.number.parse::<u64>()?.to_string())
}

fn main() {
    let _server = McpServer::new("ui", "0").task(parse);
}
