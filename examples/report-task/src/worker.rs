//! `report-task` as a Cloudflare Worker: the TaskRunner Durable Object and the fetch handler,
//! both over [`server`] with the settings in the Worker's variables.

use worker::{Context, DurableObject, Env, Request, Response, Result, State};

use crate::{Config, server};

/// The settings in `env`; a bad value fails the request or the object with a message naming
/// the variable.
fn config(env: &Env) -> Result<Config> {
    Config::from_vars(|name| env.var(name).ok().map(|value| value.to_string()))
        .map_err(worker::Error::RustError)
}

/// One task per object, bound as `TASK_RUNNER` in `wrangler.toml`.
#[worker::durable_object]
#[derive(Debug)]
pub struct TaskRunner(durable_mcp::cloudflare::TaskRunner);

impl DurableObject for TaskRunner {
    fn new(state: State, env: Env) -> Self {
        // A constructor cannot fail: with bad settings the default ones stand, and the Worker
        // (which reads the same variables first) refuses every request before one gets here.
        let config =
            config(&env).unwrap_or_else(|_| Config::from_vars(|_| None).expect("defaults"));
        Self(durable_mcp::cloudflare::TaskRunner::new(
            state,
            &env,
            || server(config),
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
    let config = config(&env)?;
    durable_mcp::cloudflare::serve(request, &env, || server(config)).await
}
