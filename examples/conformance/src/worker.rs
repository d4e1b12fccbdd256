//! The conformance fixture server as a Cloudflare Worker: the TaskRunner Durable Object and
//! the fetch handler, both over [`server`].

use worker::Env;

use crate::{Code, server, server_with};

durable_mcp::cloudflare::task_runner!(
    /// One task per object, bound as `TASK_RUNNER` in `wrangler.toml`. The `FIXTURE_CODE`
    /// variable (`v2`) picks the changed version of `order`, as a deploy would.
    pub struct TaskRunner => |env: &Env| server_with(fixture_code(env))
);

/// The version of `order` the objects run.
fn fixture_code(env: &Env) -> Code {
    let name = env.var("FIXTURE_CODE").map(|var| var.to_string());
    Code::named(name.as_deref().unwrap_or("v1"))
}

durable_mcp::cloudflare::fetch_handler!(server);
