//! A test Worker: two MCP servers in one Worker, each with its own TaskRunner and TaskIndex
//! classes, so that `tests/tests/workerd_two.rs` can check under workerd that neither class
//! nor endpoint uses the other's server, whichever the isolate builds first.
//!
//! - `/a/mcp`: server A, whose task tool `only_a` answers "server A ran only_a"; its tasks
//!   live in `RunnerA` (bound as `RUNNER_A`), listed in `IndexA` (`INDEX_A`).
//! - `/b/mcp`: server B, the same with `only_b`, `RunnerB` and `IndexB`.
//! - `GET /`: "ready".

use durable_mcp::cloudflare::{Bindings, Endpoint, serve};
use durable_mcp::{McpServer, TaskDefinition, TaskTool};
use serde_json::json;
use worker::{Context, Env, Request, Response, Result, event};

const BINDINGS_A: Bindings = Bindings::new("RUNNER_A", "INDEX_A");
const BINDINGS_B: Bindings = Bindings::new("RUNNER_B", "INDEX_B");

const ENDPOINT_A: Endpoint = Endpoint::new("/a/mcp", BINDINGS_A);
const ENDPOINT_B: Endpoint = Endpoint::new("/b/mcp", BINDINGS_B);

/// A task tool `tool` of `server` that completes at once, saying who ran it.
fn says_who(server: &'static str, tool: &'static str) -> TaskTool {
    let definition = TaskDefinition::new(tool, move |_cx, _input| {
        Box::pin(async move {
            let text = format!("server {server} ran {tool}");
            Ok(json!({ "content": [{ "type": "text", "text": text }] }))
        })
    });
    TaskTool::new(definition, json!({ "type": "object" }))
}

fn server_a() -> McpServer {
    McpServer::new("server-a", "0.0.0").task(says_who("A", "only_a"))
}

fn server_b() -> McpServer {
    McpServer::new("server-b", "0.0.0").task(says_who("B", "only_b"))
}

durable_mcp::cloudflare::task_runner!(
    /// Server A's tasks, bound as `RUNNER_A`; declares `IndexA`, bound as `INDEX_A`.
    pub struct RunnerA => |_env: &Env| server_a(); index = IndexA; bindings = BINDINGS_A
);

durable_mcp::cloudflare::task_runner!(
    /// Server B's tasks, bound as `RUNNER_B`; declares `IndexB`, bound as `INDEX_B`.
    pub struct RunnerB => |_env: &Env| server_b(); index = IndexB; bindings = BINDINGS_B
);

#[event(fetch)]
async fn fetch(request: Request, env: Env, _cx: Context) -> Result<Response> {
    let path = request.path();
    if path == "/" {
        return Response::ok("ready");
    }
    // Closures, not the fns: both are written in this function, so their type names may be
    // equal, and the endpoints alone must keep the servers apart.
    if path.starts_with("/a/") {
        serve(request, &env, ENDPOINT_A, || server_a()).await
    } else if path.starts_with("/b/") {
        serve(request, &env, ENDPOINT_B, || server_b()).await
    } else {
        Response::error("not found", 404)
    }
}
