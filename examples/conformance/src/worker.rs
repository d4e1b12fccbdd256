//! The conformance fixture server as a Cloudflare Worker: the TaskRunner Durable Object and
//! the fetch handler, both over [`server`].

use worker::{Context, DurableObject, Env, Request, Response, Result, State};

use crate::server;

/// One task per object, bound as `TASK_RUNNER` in `wrangler.toml`.
#[worker::durable_object]
#[derive(Debug)]
pub struct TaskRunner(durable_mcp::cloudflare::TaskRunner);

impl DurableObject for TaskRunner {
    fn new(state: State, env: Env) -> Self {
        Self(durable_mcp::cloudflare::TaskRunner::new(
            state, &env, server,
        ))
    }

    async fn fetch(&self, request: Request) -> Result<Response> {
        self.0.fetch(request).await
    }

    async fn alarm(&self) -> Result<Response> {
        self.0.alarm().await
    }
}

#[worker::event(fetch)]
async fn fetch(request: Request, env: Env, _cx: Context) -> Result<Response> {
    durable_mcp::cloudflare::serve(request, &env, server).await
}
