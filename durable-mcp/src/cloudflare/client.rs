//! The Worker's side of the internal protocol: one retrying helper that sends a call to a
//! named Durable Object (a task's TaskRunner, a scope's TaskIndex) and reads its reply.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use worker::wasm_bindgen::JsValue;
use worker::{Delay, Method, ObjectNamespace, Request, RequestInit, js_sys};

use super::protocol::{CALL_HEADER, OBJECT_URL, REPLY_HEADER, fits_a_header};
use crate::rpc::RpcError;

/// How many times an internal call is sent when the platform says the failure is retryable.
const CALL_ATTEMPTS: u32 = 3;

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
                Err(error) if attempt < CALL_ATTEMPTS && is_retryable(&error) => {
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

    async fn send<R: DeserializeOwned>(&self, name: &str, body: &str) -> worker::Result<R> {
        let stub = self.namespace.get_by_name(name)?;
        let mut init = RequestInit::new();
        if fits_a_header(body) {
            let headers = worker::Headers::new();
            headers.set(CALL_HEADER, body)?;
            init.with_method(Method::Get).with_headers(headers);
        } else {
            init.with_method(Method::Post)
                .with_body(Some(JsValue::from_str(body)));
        }
        let request = Request::new_with_init(OBJECT_URL, &init)?;
        let mut response = stub.fetch_with_request(request).await?;
        if response.status_code() != 200 {
            let text = response.text().await.unwrap_or_default();
            return Err(worker::Error::RustError(format!(
                "HTTP {}: {text}",
                response.status_code()
            )));
        }
        match response.headers().get(REPLY_HEADER)? {
            Some(reply) => serde_json::from_str(&reply).map_err(worker::Error::from),
            None => response.json().await,
        }
    }
}

/// Whether the platform marked the failure of a Durable Object call as safe to retry: its
/// JavaScript error has `retryable` set and not `overloaded` (more load would not help).
fn is_retryable(error: &worker::Error) -> bool {
    let worker::Error::UnknownJsError { original, .. } = error else {
        return false;
    };
    let flag = |name: &str| {
        js_sys::Reflect::get(original, &JsValue::from_str(name))
            .ok()
            .and_then(|value| value.as_bool())
            .unwrap_or(false)
    };
    flag("retryable") && !flag("overloaded")
}

/// An internal error: `what` failed because of `error`.
pub(crate) fn internal(what: &str, error: &dyn std::fmt::Display) -> RpcError {
    RpcError::internal(format!("{what}: {error}"))
}
