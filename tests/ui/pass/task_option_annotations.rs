// Checks: `annotations(..)` takes each hint as a flag or with an explicit bool.
use durable_mcp::{McpServer, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task(annotations(read_only, destructive = false, idempotent = true, open_world))]
async fn work(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    Ok(String::new())
}

fn main() {
    let debug = format!("{:?}", work());
    for hint in [
        "\"readOnlyHint\": Bool(true)",
        "\"destructiveHint\": Bool(false)",
        "\"idempotentHint\": Bool(true)",
        "\"openWorldHint\": Bool(true)",
    ] {
        assert!(debug.contains(hint), "{hint} missing from {debug}");
    }
    let _server = McpServer::new("ui", "0").task(work);
}
