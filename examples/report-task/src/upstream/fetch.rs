//! The HTTP exchange in a Cloudflare Worker: the Workers `fetch` API.

use worker::js_sys::Error;
use worker::wasm_bindgen::{self, JsCast, JsValue, prelude::wasm_bindgen};
use worker::{Fetch, Headers, Method, Request, RequestInit};

use durable_mcp::StepError;

use super::{MAX_ANSWER_BYTES, describe_call};

// The platform's WHATWG URL parser, the one `fetch` itself uses. The `url` crate would parse the
// same way, but it brings its IDNA and Unicode tables into the Worker: 70 KB of the gzipped
// script.
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = URL)]
    type JsUrl;
    #[wasm_bindgen(constructor, catch, js_class = "URL")]
    fn parse(url: &str) -> Result<JsUrl, JsValue>;
    #[wasm_bindgen(method, getter)]
    fn protocol(this: &JsUrl) -> String;
    #[wasm_bindgen(method, getter)]
    fn hostname(this: &JsUrl) -> String;
    #[wasm_bindgen(method, getter)]
    fn href(this: &JsUrl) -> String;
}

/// Checks that `url` is one `fetch` can reach (`http://` or `https://`, no query).
pub(super) fn check_base_url(url: &str) -> Result<(), String> {
    let parsed = JsUrl::parse(url).map_err(|error| match error.dyn_ref::<Error>() {
        Some(error) => format!("is not a URL: {}", String::from(error.message())),
        None => "is not a URL".to_owned(),
    })?;
    if !matches!(parsed.protocol().as_str(), "http:" | "https:") {
        return Err("must be an http:// or https:// URL".to_owned());
    }
    if parsed.hostname().is_empty() {
        return Err("has no host".to_owned());
    }
    // `search` is empty for both no query and an empty one; the serialisation tells them apart
    // (a `?` before the fragment starts the query: paths and hosts have theirs escaped).
    let href = parsed.href();
    if href.split('#').next().unwrap_or_default().contains('?') {
        return Err("must not have a query".to_owned());
    }
    Ok(())
}

/// One `fetch`; the body of a 2xx answer, or a retryable error.
pub(super) async fn call(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<Vec<u8>, StepError> {
    let what = describe_call(method, path);
    let unreachable =
        |error: &dyn std::fmt::Display| StepError::retryable(format!("{what} failed: {error}"));
    let request_headers = Headers::new();
    for (name, value) in headers {
        request_headers
            .set(name, value)
            .map_err(|e| StepError::non_retryable(format!("{what}: header {name}: {e}")))?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(method.to_owned()))
        .with_headers(request_headers);
    if !body.is_empty() {
        let bytes = worker::js_sys::Uint8Array::from(body.as_slice());
        init.with_body(Some(JsValue::from(bytes)));
    }
    let request = Request::new_with_init(&format!("{base}{path}"), &init)
        .map_err(|e| StepError::non_retryable(format!("{what}: cannot build the request: {e}")))?;
    let mut response = Fetch::Request(request)
        .send()
        .await
        .map_err(|e| unreachable(&e))?;
    let status = response.status_code();
    let body = response.bytes().await.map_err(|e| unreachable(&e))?;
    if body.len() > MAX_ANSWER_BYTES {
        return Err(StepError::retryable(format!(
            "{what} answered more than {MAX_ANSWER_BYTES} bytes"
        )));
    }
    if !(200..300).contains(&status) {
        return Err(StepError::retryable(format!("{what} answered {status}")));
    }
    Ok(body)
}
