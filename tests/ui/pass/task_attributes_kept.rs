// Checks: the fn's visibility and other attributes survive, and the doc comment becomes the
// description.
mod tools {
    use durable_mcp::{TaskContext, TaskError, mcp_task};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Input {}

    /// Sends the weekly digest.
    #[mcp_task]
    #[allow(clippy::unused_async)]
    pub async fn digest(_cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
        Ok(String::new())
    }
}

fn main() {
    let debug = format!("{:?}", tools::digest());
    assert!(debug.contains("Sends the weekly digest."), "{debug}");
    let _server = durable_mcp::McpServer::new("ui", "0").task(tools::digest);
}
