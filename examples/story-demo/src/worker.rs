//! `story-demo` as a Cloudflare Worker: the TaskRunner Durable Object, the MCP endpoint and
//! the web page.

use durable_mcp::http::HttpResponse;
use worker::{Context, Env, Request, Response, Result};

use crate::pages::{self, Host};
use crate::server;

durable_mcp::cloudflare::task_runner!(
    /// One story per object, bound as `TASK_RUNNER` in `wrangler.toml`.
    pub struct TaskRunner => |_env: &Env| server()
);

#[worker::event(fetch)]
async fn fetch(request: Request, env: Env, _cx: Context) -> Result<Response> {
    let path = request.path();
    if let Some(page) = pages::page(request.method().as_ref(), &path, Host::Worker) {
        return into_response(page);
    }
    durable_mcp::cloudflare::serve(
        request,
        &env,
        durable_mcp::cloudflare::Endpoint::DEFAULT,
        server,
    )
    .await
}

fn into_response(page: HttpResponse) -> Result<Response> {
    let mut response = Response::from_bytes(page.body)?.with_status(page.status);
    for (name, value) in page.headers {
        response.headers_mut().set(name, &value)?;
    }
    Ok(response)
}
