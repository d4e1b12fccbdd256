//! Durable Object RPC between the Worker and its objects: the Worker calls one method,
//! [`CALL_METHOD`], on an object's stub, with the call's JSON text; the object answers with the
//! reply's JSON text. The Worker reaches its objects this way rather than with `fetch` because
//! a call costs less: it carries the JSON text alone, with no HTTP request or response around
//! it on either side.
//!
//! The runtime serves RPC only to classes that extend `DurableObject` from
//! `cloudflare:workers`, and the classes wasm-bindgen exports extend nothing. The module below,
//! bundled into the Worker by worker-build, makes every exported class that has the
//! [`CALL_METHOD`] method extend `DurableObject`. The runtime reads the classes once the
//! script's top level and its queued microtasks have run, so the change is queued as a
//! microtask: at the module's own evaluation, wasm-bindgen's glue (`index.js`, which imports
//! it) has not defined the classes yet.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll, Waker};

use futures_util::FutureExt;
use worker::js_sys::Promise;
use worker::wasm_bindgen::{self, JsValue, prelude::wasm_bindgen};
use worker::wasm_bindgen_futures::future_to_promise;

use super::driven::settle;

/// The JavaScript name of the method the Worker calls on a durable-mcp object.
pub(crate) const CALL_METHOD: &str = "durableMcpCall";

#[wasm_bindgen(inline_js = r#"
import { DurableObject } from "cloudflare:workers";
import * as glue from "../../index.js";

let extended = 0;
queueMicrotask(() => {
  for (const value of Object.values(glue)) {
    const callable = typeof value === "function" && value.prototype
      && typeof value.prototype.durableMcpCall === "function";
    if (callable && !(value.prototype instanceof DurableObject)) {
      Object.setPrototypeOf(value.prototype, DurableObject.prototype);
      Object.setPrototypeOf(value, DurableObject);
      extended += 1;
    }
  }
});

export function extended_classes() {
  return extended;
}
"#)]
extern "C" {
    /// How many classes the module made extend `DurableObject`.
    fn extended_classes() -> u32;

    /// A stub of a durable-mcp object, as the Worker calls it.
    pub(crate) type CallTarget;

    /// Sends one call, as JSON text; resolves to the reply's JSON text.
    #[wasm_bindgen(method, catch, js_name = durableMcpCall)]
    pub(crate) fn durable_mcp_call(this: &CallTarget, call: &str) -> Result<Promise, JsValue>;
}

/// Logs, from a new object, when no class could be made an RPC target: the Worker's calls to
/// it would then fail, and the log says why. Declaring the classes with
/// [`task_runner!`](super::task_runner) is what gives them the method.
pub(crate) fn check_rpc_target(class: &str) {
    if extended_classes() == 0 {
        tracing::error!(
            target: crate::core::trace::TARGET,
            "no Durable Object class of this Worker answers RPC, so the Worker \
             cannot reach {class}; declare it with durable_mcp::cloudflare::task_runner! (or give it the \
             `{CALL_METHOD}` method that macro writes), built with worker-build"
        );
    }
}

/// What an object's [`CALL_METHOD`] returns for the reply `answer` resolves to: the reply's
/// text itself when `answer` is ready at its first poll (a poll of an unchanged task touches
/// no storage), else a promise of it. The runtime accepts either from an RPC method, and the
/// first spares the common call a promise and a microtask turn.
///
/// A panic in `answer` rejects the call with a JavaScript error, as a panic in an exported
/// `async fn` does.
pub(crate) fn answer_now_or_later<F>(answer: F) -> Result<JsValue, JsValue>
where
    F: Future<Output = Result<String, JsValue>> + 'static,
{
    let mut answer = Box::pin(AssertUnwindSafe(answer).catch_unwind());
    // The future keeps the waker of its latest poll only, so the promise's executor, which
    // polls it again at once, is the one woken.
    match answer
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(outcome) => settle(outcome).map(JsValue::from),
        Poll::Pending => {
            Ok(future_to_promise(async move { settle(answer.await).map(JsValue::from) }).into())
        }
    }
}
