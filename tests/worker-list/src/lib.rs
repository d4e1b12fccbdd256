//! A test Worker: durable-mcp's Worker task route ([`ObjectTasks`], what the router calls)
//! driven directly, its errors and cursors as the router sends them, so that `tests/tests/workerd_list.rs` can check task listings under
//! workerd. Every answer is JSON; a refusal is HTTP 200 with `{"error": {code, message}}`.
//!
//! - `POST /create?tool=<name>[&scope=<scope>][&id=<task id>]`: creates a task,
//!   `{"taskId", "status", "createdAt"}`.
//! - `GET /list?scope=<scope>&limit=<n>[&cursor=<cursor>]`: one page,
//!   `{"tasks": [{"taskId", "status", "createdAt"}], "nextCursor"}`.
//! - `GET /get?id=<task id>`: `{"taskId", "status", "createdAt"}`.
//!
//! `createdAt` is the task's creation time, in milliseconds since the epoch. (A listing is
//! ordered by the time the scope's index recorded the id, just before the task was created.)
//!
//! Tasks: `quick` completes at once (kept an hour); `short_lived` completes at once and is
//! purged 2 s after its creation.

use std::collections::HashMap;
use std::time::Duration;

use durable_mcp::__internals::{RpcError, decode_cursor, encode_cursor};
use durable_mcp::cloudflare::ObjectTasks;
use durable_mcp::http::CreateTask;
use durable_mcp::http::TaskRoute;
use durable_mcp::http::TaskSnapshot;
use durable_mcp::{McpServer, TaskDefinition, TaskTool};
use serde_json::{Value, json};
use worker::{Context, Env, Request, Response, Result, event};

fn done_at_once(name: &str, ttl: Duration) -> TaskTool {
    let definition = TaskDefinition::new(name, |_cx, _input| {
        Box::pin(async { Ok(json!({ "content": [{ "type": "text", "text": "done" }] })) })
    })
    .ttl(Some(ttl));
    TaskTool::new(definition, json!({ "type": "object" }))
}

fn server() -> McpServer {
    McpServer::new("worker-list", "0.0.0")
        .task(done_at_once("quick", Duration::from_secs(3600)))
        .task(done_at_once("short_lived", Duration::from_secs(2)))
}

durable_mcp::cloudflare::task_runner!(
    /// One task per object, bound as `TASK_RUNNER`; declares `TaskIndex` too.
    pub struct TaskRunner => |_env: &Env| server()
);

#[event(fetch)]
async fn fetch(request: Request, env: Env, _cx: Context) -> Result<Response> {
    let url = request.url()?;
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    let param = |name: &str| query.get(name).cloned();
    if url.path() == "/" {
        return Response::ok("ready");
    }
    let tasks = ObjectTasks::from_env(&env)?;
    let answer = match url.path() {
        "/create" => {
            let mut create = CreateTask::new(param("tool").unwrap_or_default(), json!({}));
            create.list_scope = param("scope");
            create.task_id = param("id");
            tasks
                .create(create)
                .await
                .map(|task| brief(&task))
                .map_err(RpcError::from)
        }
        "/list" => {
            let scope = param("scope").unwrap_or_default();
            let limit = param("limit").and_then(|n| n.parse().ok()).unwrap_or(10);
            match param("cursor").as_deref().map(decode_cursor).transpose() {
                Err(error) => Err(error),
                Ok(after) => tasks
                    .list(&scope, after.as_ref(), limit)
                    .await
                    .map(|page| {
                        let listed: Vec<Value> = page.items.iter().map(brief).collect();
                        let next = page.next.as_ref().map(encode_cursor);
                        json!({ "tasks": listed, "nextCursor": next })
                    })
                    .map_err(RpcError::from),
            }
        }
        "/get" => {
            let id = param("id").unwrap_or_default();
            tasks
                .get(&id, None)
                .await
                .map(|task| brief(&task))
                .map_err(RpcError::from)
        }
        _ => return Response::error("not found", 404),
    };
    Response::from_json(&answer.unwrap_or_else(refusal))
}

fn brief(task: &TaskSnapshot) -> Value {
    json!({
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": task.created_at.as_millis(),
    })
}

fn refusal(error: RpcError) -> Value {
    json!({ "error": { "code": error.error.code, "message": error.error.message } })
}
