use durable_mcp::cloudflare;
use durable_mcp::wire::{CallToolResult, Tool};
use durable_mcp::{McpServer, PlainTool, TaskDefinition, TaskTool, ToolCall, duration};
use serde_json::json;
use wasm_bindgen::prelude::*;
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

/// The server: a task tool and a plain tool.
fn server() -> McpServer {
    let pause = TaskDefinition::new("pause", |cx, _input| {
        Box::pin(async move {
            cx.sleep("pause", duration!("1s")).await?;
            Ok(CallToolResult::text("paused").into_value())
        })
    });
    McpServer::new("recipe", "1.0.0")
        .task(TaskTool::new(pause, json!({ "type": "object" })))
        .tool(PlainTool::new(Tool::new("echo", json!({ "type": "object" })), |call: ToolCall| async move {
            Ok(CallToolResult::text(call.arguments.to_string()).into())
        }))
}

/// One task per object; `wrangler.toml` binds the class as `TASK_RUNNER`.
#[durable_object(alarm)]
pub struct TaskRunner(cloudflare::TaskRunner);

impl DurableObject for TaskRunner {
    fn new(state: State, env: Env) -> Self {
        Self(cloudflare::TaskRunner::new(state, &env, server))
    }

    /// Refused with 404: the Worker does not reach the object with `fetch`.
    async fn fetch(&self, request: Request) -> Result<Response> {
        self.0.fetch(request)
    }

    /// Runs whatever is due for the task.
    async fn alarm(&self) -> Result<Response> {
        self.0.alarm().await
    }
}

/// The Durable Object RPC method through which the Worker reaches the object: it must be
/// named `durableMcpCall` in JavaScript.
#[wasm_bindgen]
impl TaskRunner {
    #[wasm_bindgen(js_name = durableMcpCall)]
    pub fn durable_mcp_call(&self, call: String) -> std::result::Result<JsValue, JsValue> {
        self.0.call(call)
    }
}

// The listing index, bound as `TASK_INDEX`.
durable_mcp::cloudflare::task_index!(pub struct TaskIndex);

// The Worker's `fetch` export.
durable_mcp::cloudflare::fetch_handler!(server);
