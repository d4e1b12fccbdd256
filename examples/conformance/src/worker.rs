//! The conformance fixture server as a Cloudflare Worker: the TaskRunner Durable Object and
//! the fetch handler, both over [`server`].

use worker::Env;

use crate::server;

durable_mcp::task_runner!(
    /// One task per object, bound as `TASK_RUNNER` in `wrangler.toml`.
    pub struct TaskRunner => |_env: &Env| server()
);

durable_mcp::fetch_handler!(server);
