//! `hello`: the smallest durable-mcp server, natively (`src/main.rs`) and as a Cloudflare Worker.

use durable_mcp::{McpServer, StepError, TaskContext, TaskError, duration, mcp_task, step, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Whom to greet.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// The name to greet.
    name: String,
}

/// Greets `name`, asks how they are, thinks about the answer for 3 s and replies.
#[mcp_task(ttl = "1h", poll_interval = "1s")]
async fn greet(cx: &TaskContext, input: Greet) -> Result<String, TaskError> {
    let greeting = compose(&input.name).await?; // journaled: never re-run once recorded
    let mood = json!({ "mood": { "type": "string", "title": "Your mood" } });
    let schema = json!({ "type": "object", "properties": mood, "required": ["mood"] });
    let message = format!("{greeting} How are you?");
    let form = json!({ "mode": "form", "message": message, "requestedSchema": schema });
    let answer = cx.elicit("mood", form).await?; // waits, durably, for tasks/update
    let mood = answer["content"]["mood"].as_str().unwrap_or("unsure"); // no content: declined
    cx.status(format!("thinking about {mood:?}")).await?;
    cx.sleep("think", duration!("3s")).await?; // durable: survives a restart
    Ok(format!("{greeting} Glad you feel {mood}."))
}

#[step]
async fn compose(name: &str) -> Result<String, StepError> {
    Ok(format!("Hello, {name}!"))
}

/// What to shout.
#[derive(Deserialize, JsonSchema)]
struct Shout {
    /// The text to answer in capitals.
    text: String,
}

/// Answers at once with `text` in capitals: a plain tool, no task.
#[tool(annotations(read_only))]
async fn shout(input: Shout) -> String {
    input.text.to_uppercase()
}

/// The server: the task tool `greet` and the plain tool `shout`.
pub fn server() -> McpServer {
    McpServer::new("hello", env!("CARGO_PKG_VERSION"))
        .task(greet)
        .tool(shout)
}

// The Worker: its TaskRunner and TaskIndex Durable Objects (`wrangler.toml`) and fetch handler.
#[cfg(target_arch = "wasm32")]
mod worker {
    durable_mcp::cloudflare::task_runner!(pub struct TaskRunner => |_env: &worker::Env| crate::server());
    durable_mcp::cloudflare::fetch_handler!(crate::server);
}
