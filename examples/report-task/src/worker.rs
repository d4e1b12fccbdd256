//! `report-task` as a Cloudflare Worker: the TaskRunner Durable Object and the fetch handler,
//! both over [`server`] with the settings in the Worker's variables.

use worker::js_sys::Promise;
use worker::wasm_bindgen::{self, JsValue, prelude::wasm_bindgen};
use worker::{Env, Response, Result, web_sys};

use crate::{Config, server};

/// The settings in `env`; a bad value fails the request with a message naming the variable.
fn config(env: &Env) -> Result<Config> {
    Config::from_vars(|name| env.var(name).ok().map(|value| value.to_string()))
        .map_err(worker::Error::RustError)
}

durable_mcp::cloudflare::task_runner!(
    /// One task per object, bound as `TASK_RUNNER` in `wrangler.toml`. A constructor cannot
    /// fail: with bad settings the defaults stand, and the Worker (which reads the same
    /// variables first) refuses every request before one gets here.
    pub struct TaskRunner => |env: &Env| {
        let config = config(env).unwrap_or_else(|_| Config::from_vars(|_| None).expect("defaults"));
        server(config)
    }
);

/// The Worker's fetch handler: a plain function, which `durable_mcp::cloudflare::respond`
/// answers at less cost than an `async` one (`durable_mcp::cloudflare::fetch_handler!` writes
/// it for a server that needs no settings).
#[wasm_bindgen(js_name = fetch)]
pub fn fetch(request: web_sys::Request, env: Env, _context: JsValue) -> Promise {
    match config(&env) {
        Ok(config) => durable_mcp::cloudflare::respond(
            request,
            env,
            durable_mcp::cloudflare::Endpoint::DEFAULT,
            move || server(config),
        ),
        Err(error) => {
            worker::console_error!("{error}");
            let refusal = Response::error(error.to_string(), 500).map(web_sys::Response::from);
            match refusal {
                Ok(refusal) => Promise::resolve(&JsValue::from(refusal)),
                Err(error) => Promise::reject(&error.into()),
            }
        }
    }
}
