//! The report service: the two calls the tools make, over whatever HTTP the host has.
//!
//! Everything the tools know about the outside world is the two calls of [`Upstream`]. The
//! HTTP exchange itself is the host's: a socket and hyper natively (`socket.rs`), the Workers
//! `fetch` API in a Cloudflare Worker (`fetch.rs`). Both answer a 2xx body or a [`StepError`]
//! saying whether another attempt could help. `REPORT_API_URL=demo` puts a demo service in the
//! server itself (`demo.rs`), so that a deployed example works before a real service exists.

#[cfg(not(target_arch = "wasm32"))]
#[path = "socket.rs"]
mod transport;

#[cfg(target_arch = "wasm32")]
#[path = "fetch.rs"]
mod transport;

mod demo;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use durable_mcp::StepError;

/// The largest answer body read from the service; a report is small.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// The report `GET /data` answers with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The report's title.
    pub title: String,
    /// Its rows, passed on as they came.
    pub rows: Vec<Value>,
}

/// The `REPORT_API_URL` that selects the demo service inside the server.
pub const DEMO: &str = "demo";

/// The report service: at one base URL, or the demo inside the server.
#[derive(Clone, Debug)]
pub struct Upstream {
    /// The base URL without its trailing slash (requests go below it), or `None` for the demo.
    base: Option<String>,
}

impl Upstream {
    /// The service at `url`, or the demo for `demo`; the error says what is wrong with the
    /// URL (the host decides which schemes it can speak).
    pub fn new(url: &str) -> Result<Self, String> {
        if url.trim() == DEMO {
            return Ok(Upstream { base: None });
        }
        let base = url.trim().trim_end_matches('/').to_owned();
        transport::check_base_url(&base)?;
        Ok(Upstream { base: Some(base) })
    }

    /// `GET /data?to=<to>`: the report to send to `to`.
    ///
    /// A failure to connect or a non-2xx answer is worth another attempt; a 2xx answer that is
    /// not a report is not (the service would answer the same again).
    pub async fn fetch_report(&self, to: &str) -> Result<Report, StepError> {
        let Some(base) = &self.base else {
            return Ok(demo::report_for(to));
        };
        let path = format!("/data?to={}", percent_encode(to));
        let body = transport::call(base, "GET", &path, &[], Vec::new()).await?;
        // from_str: the journal reads reports with it too, so the Worker has one JSON reader.
        let report = match std::str::from_utf8(&body) {
            Ok(text) => serde_json::from_str(text).map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        report.map_err(|error| {
            StepError::non_retryable(format!(
                "GET /data answered something not a report: {error}"
            ))
        })
    }

    /// `POST /send` with `{"to", "report"}` and header `Idempotency-Key: <key>`, so that the
    /// service can drop a repeat of a send whose answer was lost.
    pub async fn send_report(&self, to: &str, report: &Report, key: &str) -> Result<(), StepError> {
        let Some(base) = &self.base else {
            demo::accept(to, report, key);
            return Ok(());
        };
        let body = json!({ "to": to, "report": report }).to_string();
        let headers = [
            ("content-type", "application/json"),
            ("idempotency-key", key),
        ];
        transport::call(base, "POST", "/send", &headers, body.into_bytes())
            .await
            .map(drop)
    }
}

/// What a failed exchange is called in errors: the method and the path without its query.
fn describe_call(method: &str, path: &str) -> String {
    format!("{method} {}", path.split('?').next().unwrap_or(path))
}

/// Percent-encodes everything but RFC 3986's unreserved characters, for a query value.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(percent_encode("ada@example.org"), "ada%40example.org");
        assert_eq!(percent_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(percent_encode("Az09-._~"), "Az09-._~");
    }

    #[test]
    fn a_trailing_slash_of_the_base_url_is_dropped() {
        assert_eq!(
            Upstream::new(" http://127.0.0.1:8788/api/ ").unwrap().base,
            Some("http://127.0.0.1:8788/api".to_owned())
        );
    }

    #[test]
    fn the_demo_service_answers_inside_the_server() {
        let demo = Upstream::new("demo").unwrap();
        let report = run_to_end(demo.fetch_report("ada@example.org")).unwrap();
        assert_eq!(report.title, "Weekly numbers for ada@example.org");
        assert_eq!(report.rows.len(), 3);
        run_to_end(demo.send_report("ada@example.org", &report, "key")).unwrap();
    }

    /// Polls a future that never waits (the demo's) to its end.
    fn run_to_end<F: std::future::Future>(future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(output) => output,
            std::task::Poll::Pending => panic!("the demo service never waits"),
        }
    }
}
