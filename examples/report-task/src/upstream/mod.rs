//! The report service: the two calls the tools make, over whatever HTTP the host has.
//!
//! Everything the tools know about the outside world is the two calls of [`Upstream`]. The
//! HTTP exchange itself is the host's: a socket and hyper natively (`socket.rs`), the Workers
//! `fetch` API in a Cloudflare Worker (`fetch.rs`). Both answer a 2xx body or a [`StepError`]
//! saying whether another attempt could help.

#[cfg(not(target_arch = "wasm32"))]
#[path = "socket.rs"]
mod transport;

#[cfg(target_arch = "wasm32")]
#[path = "fetch.rs"]
mod transport;

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

/// The report service at one base URL.
#[derive(Clone, Debug)]
pub struct Upstream {
    /// The base URL without its trailing slash; requests go below it.
    base: String,
}

impl Upstream {
    /// The service at `url`; the error says what is wrong with it (the host decides which
    /// schemes it can speak).
    pub fn new(url: &str) -> Result<Self, String> {
        let base = url.trim().trim_end_matches('/').to_owned();
        transport::check_base_url(&base)?;
        Ok(Upstream { base })
    }

    /// `GET /data?to=<to>`: the report to send to `to`.
    ///
    /// A failure to connect or a non-2xx answer is worth another attempt; a 2xx answer that is
    /// not a report is not (the service would answer the same again).
    pub async fn fetch_report(&self, to: &str) -> Result<Report, StepError> {
        let path = format!("/data?to={}", percent_encode(to));
        let body = transport::call(&self.base, "GET", &path, &[], Vec::new()).await?;
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
        let body = json!({ "to": to, "report": report }).to_string();
        let headers = [
            ("content-type", "application/json"),
            ("idempotency-key", key),
        ];
        transport::call(&self.base, "POST", "/send", &headers, body.into_bytes())
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
            "http://127.0.0.1:8788/api"
        );
    }
}
