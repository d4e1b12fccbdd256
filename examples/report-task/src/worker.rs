//! `report-task` as a Cloudflare Worker: the TaskRunner Durable Object and the fetch handler,
//! both over [`server`] with the settings in the Worker's variables.

use worker::{Context, Env, Response, Result, web_sys};

use crate::{Config, server};

/// The settings in `env`; a bad value fails the request with a message naming the variable.
fn config(env: &Env) -> Result<Config> {
    Config::from_vars(|name| env.var(name).ok().map(|value| value.to_string()))
        .map_err(worker::Error::RustError)
}

durable_mcp::task_runner!(
    /// One task per object, bound as `TASK_RUNNER` in `wrangler.toml`. A constructor cannot
    /// fail: with bad settings the defaults stand, and the Worker (which reads the same
    /// variables first) refuses every request before one gets here.
    pub struct TaskRunner => |env: &Env| {
        let config = config(env).unwrap_or_else(|_| Config::from_vars(|_| None).expect("defaults"));
        server(config)
    }
);

#[worker::event(fetch)]
async fn fetch(request: web_sys::Request, env: Env, _cx: Context) -> Result<Response> {
    let config = config(&env)?;
    durable_mcp::cloudflare::serve(request, &env, || server(config)).await
}
