//! The Worker's side of the internal protocol: one retrying helper that sends a call to a
//! named Durable Object (a task's TaskRunner, a scope's TaskIndex) and reads its reply.

use std::cell::RefCell;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{Delay, Env, ObjectNamespace, js_sys};

use super::driven::settled;
use super::object_rpc::CallTarget;
use crate::rpc::RpcError;

/// How many times an internal call is sent when the platform says the failure is retryable.
const CALL_ATTEMPTS: u32 = 3;

thread_local! {
    /// The bindings this isolate has found to be Durable Object namespaces.
    static NAMESPACES: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// The Durable Object namespace bound as `binding`. worker's `Env::durable_object` checks the
/// binding's class by name on every call, three JavaScript calls a request; a binding does not
/// change class within an isolate, so this checks each once.
pub(crate) fn bound_namespace(env: &Env, binding: &'static str) -> worker::Result<ObjectNamespace> {
    if NAMESPACES.with(|checked| checked.borrow().contains(&binding)) {
        let value = js_sys::Reflect::get(env, &JsValue::from_str(binding))?;
        if !value.is_undefined() {
            return Ok(value.unchecked_into());
        }
    }
    let namespace = env.durable_object(binding)?;
    NAMESPACES.with(|checked| checked.borrow_mut().push(binding));
    Ok(namespace)
}

/// The objects of one Durable Object namespace, reached by name.
pub(crate) struct ObjectClient {
    namespace: ObjectNamespace,
    /// What the objects are, for error messages ("the task's Durable Object").
    what: &'static str,
}

impl ObjectClient {
    /// A client of `namespace`, whose objects error messages call `what`.
    pub(crate) fn new(namespace: ObjectNamespace, what: &'static str) -> Self {
        ObjectClient { namespace, what }
    }

    /// Sends `call` to the object named `name`: a fresh stub per attempt, and another attempt
    /// only when the platform marks the failure retryable (every internal call is idempotent).
    pub(crate) async fn call<C: Serialize, R: DeserializeOwned>(
        &self,
        name: &str,
        call: &C,
    ) -> Result<R, RpcError> {
        let body = serde_json::to_string(call).map_err(|e| internal("encoding a call", &e))?;
        let mut pause = Duration::from_millis(20);
        let mut attempt = 1;
        loop {
            match self.send(name, &body).await {
                Ok(reply) => return Ok(reply),
                Err(error) if attempt < CALL_ATTEMPTS && error.is_retryable() => {
                    Delay::from(pause).await;
                    pause *= 4;
                    attempt += 1;
                }
                Err(error) => {
                    return Err(internal(&format!("reaching {}", self.what), &error));
                }
            }
        }
    }

    /// One attempt: a Durable Object RPC call on a fresh stub of the object named `name`.
    async fn send<R: DeserializeOwned>(&self, name: &str, call: &str) -> Result<R, CallError> {
        let stub = self
            .namespace
            .get_by_name(name)
            .map_err(CallError::Worker)?;
        let target: CallTarget = stub.into_rpc();
        let promise = target.durable_mcp_call(call).map_err(CallError::Js)?;
        let reply = settled(promise).await.map_err(CallError::Js)?;
        let reply = reply
            .as_string()
            .ok_or_else(|| CallError::Reply(format!("a reply that is not text: {reply:?}")))?;
        serde_json::from_str(&reply).map_err(|error| CallError::Reply(error.to_string()))
    }
}

/// Why one attempt at an internal call failed.
enum CallError {
    /// The binding refused to make a stub.
    Worker(worker::Error),
    /// The call was rejected: the platform's error, or the object's.
    Js(JsValue),
    /// The reply was not the JSON of the expected type.
    Reply(String),
}

impl CallError {
    /// Whether the platform marked the failure as safe to retry: its JavaScript error has
    /// `retryable` set and not `overloaded` (more load would not help).
    fn is_retryable(&self) -> bool {
        let CallError::Js(error) = self else {
            return false;
        };
        let flag = |name: &str| {
            js_sys::Reflect::get(error, &JsValue::from_str(name))
                .ok()
                .and_then(|value| value.as_bool())
                .unwrap_or(false)
        };
        flag("retryable") && !flag("overloaded")
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Worker(error) => error.fmt(f),
            CallError::Js(error) => match error.dyn_ref::<js_sys::Error>() {
                Some(error) => f.write_str(&String::from(error.message())),
                None => write!(f, "{error:?}"),
            },
            CallError::Reply(error) => write!(f, "unreadable reply: {error}"),
        }
    }
}

/// An internal error: `what` failed because of `error`.
pub(crate) fn internal(what: &str, error: &dyn std::fmt::Display) -> RpcError {
    RpcError::internal(format!("{what}: {error}"))
}
