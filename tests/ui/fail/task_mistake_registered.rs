// Checks: a #[mcp_task] fn with a mistake, registered on a server, gives the one error about
// the mistake and none at the registration (the macro leaves a stand-in of the same name).
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(ttl = "soon")]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let _server = McpServer::new("demo", "0.1.0").task(work);
}
