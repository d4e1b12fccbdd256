//! The report service, over plain HTTP/1.1.
//!
//! Everything the tools know about the outside world is the two calls of [`Upstream`]; a host
//! without sockets (a Cloudflare Worker, where `fetch` does the HTTP) swaps this module for one
//! with the same two methods.
//!
//! Each call opens its own connection: calls are seconds apart (a cool-off and retry backoffs
//! lie between them), so a pool would only hold idle sockets.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpStream;

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
    /// `host:port` as the URL wrote it, for the `Host` header.
    authority: String,
    host: String,
    port: u16,
    /// The base URL's path without its trailing slash; requests go below it.
    prefix: String,
}

impl Upstream {
    /// The service at `url`, an `http://` URL; the error says what is wrong with it.
    pub fn new(url: &str) -> Result<Self, String> {
        let uri: Uri = url
            .trim()
            .parse()
            .map_err(|error| format!("is not a URL: {error}"))?;
        if uri.scheme_str() != Some("http") {
            return Err("must be an http:// URL (this example speaks plain HTTP)".to_owned());
        }
        let (Some(authority), Some(host)) = (uri.authority(), uri.host()) else {
            return Err("has no host".to_owned());
        };
        if uri.query().is_some() {
            return Err("must not have a query".to_owned());
        }
        Ok(Upstream {
            authority: authority.as_str().to_owned(),
            // `Uri` keeps IPv6 brackets, which a socket address lookup does not want.
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port: uri.port_u16().unwrap_or(80),
            prefix: uri.path().trim_end_matches('/').to_owned(),
        })
    }

    /// `GET /data?to=<to>`: the report to send to `to`.
    ///
    /// A failure to connect or a non-2xx answer is worth another attempt; a 2xx answer that is
    /// not a report is not (the service would answer the same again).
    pub async fn fetch_report(&self, to: &str) -> Result<Report, StepError> {
        let path = format!("/data?to={}", percent_encode(to));
        let body = self.call(Method::GET, &path, &[], Bytes::new()).await?;
        serde_json::from_slice(&body).map_err(|error| {
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
            (CONTENT_TYPE.as_str(), "application/json"),
            ("idempotency-key", key),
        ];
        self.call(Method::POST, "/send", &headers, Bytes::from(body))
            .await
            .map(drop)
    }

    /// One request on a fresh connection; the body of a 2xx answer, or a retryable error.
    async fn call(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Bytes, StepError> {
        let what = format!("{method} {}", path.split('?').next().unwrap_or(path));
        let unreachable =
            |error: &dyn std::fmt::Display| StepError::retryable(format!("{what} failed: {error}"));
        let stream = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| unreachable(&e))?;
        let _ = stream.set_nodelay(true);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| unreachable(&e))?;
        // The connection does the socket I/O; it ends when `sender` is dropped, and a step
        // that times out drops it with the request.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.prefix))
            .header(HOST, &self.authority);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(body)).map_err(|e| {
            StepError::non_retryable(format!("{what}: cannot build the request: {e}"))
        })?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| unreachable(&e))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| unreachable(&e))?
            .to_bytes();
        if !status.is_success() {
            return Err(StepError::retryable(format!(
                "{what} answered {}",
                describe(status)
            )));
        }
        Ok(body)
    }
}

/// `503 Service Unavailable`, or the bare number for a code without a reason.
fn describe(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
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
    fn base_urls_are_checked() {
        let upstream = Upstream::new("http://127.0.0.1:8788/api/").unwrap();
        assert_eq!(upstream.authority, "127.0.0.1:8788");
        assert_eq!((upstream.host.as_str(), upstream.port), ("127.0.0.1", 8788));
        assert_eq!(upstream.prefix, "/api");
        let upstream = Upstream::new("http://[::1]").unwrap();
        assert_eq!((upstream.host.as_str(), upstream.port), ("::1", 80));
        assert_eq!(upstream.prefix, "");
        assert!(Upstream::new("https://example.org").is_err());
        assert!(Upstream::new("127.0.0.1:8788").is_err());
        assert!(Upstream::new("http://h/?q=1").is_err());
    }
}
