// Checks: a task may take only its input, without the context.
use durable_mcp::{McpServer, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {
    name: String,
}

#[mcp_task]
async fn greet(input: Input) -> Result<String, TaskError> {
    Ok(format!("hello {}", input.name))
}

fn main() {
    let server = McpServer::new("ui", "0").task(greet);
    assert_eq!(server.tool_names(), ["greet"]);
}
