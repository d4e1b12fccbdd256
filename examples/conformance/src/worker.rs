//! The conformance fixture server as a Cloudflare Worker: the TaskRunner Durable Object and
//! the fetch handler, both over [`server`].

use worker::{Context, Env, Response, Result, web_sys};

use crate::server;

durable_mcp::task_runner!(
    /// One task per object, bound as `TASK_RUNNER` in `wrangler.toml`.
    pub struct TaskRunner => |_env: &Env| server()
);

#[worker::event(fetch)]
async fn fetch(request: web_sys::Request, env: Env, _cx: Context) -> Result<Response> {
    durable_mcp::cloudflare::serve(request, &env, server).await
}
