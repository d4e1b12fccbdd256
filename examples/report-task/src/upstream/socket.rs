//! The HTTP exchange natively: hyper's HTTP/1 client connection over a tokio socket.
//!
//! Each call opens its own connection: calls are seconds apart (a cool-off and retry backoffs
//! lie between them), so a pool would only hold idle sockets.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::HOST;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use durable_mcp::StepError;

use super::{MAX_ANSWER_BYTES, describe_call};

/// Where a base URL points.
#[derive(Debug, PartialEq)]
struct Base {
    /// `host:port` as the URL wrote it, for the `Host` header.
    authority: String,
    host: String,
    port: u16,
    /// The URL's path; requests go below it.
    prefix: String,
}

/// Checks that `url` is one this transport can reach (plain `http://`).
pub(super) fn check_base_url(url: &str) -> Result<(), String> {
    parse_base(url).map(drop)
}

fn parse_base(url: &str) -> Result<Base, String> {
    let uri: Uri = url
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
    Ok(Base {
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

/// One request on a fresh connection; the body of a 2xx answer, or a retryable error.
pub(super) async fn call(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<Vec<u8>, StepError> {
    let what = describe_call(method, path);
    let base = parse_base(base).map_err(StepError::non_retryable)?;
    let unreachable =
        |error: &dyn std::fmt::Display| StepError::retryable(format!("{what} failed: {error}"));
    let stream = TcpStream::connect((base.host.as_str(), base.port))
        .await
        .map_err(|e| unreachable(&e))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| unreachable(&e))?;
    // The connection does the socket I/O; it ends when `sender` is dropped, and a step that
    // times out drops it with the request.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|e| StepError::non_retryable(format!("{what}: {e}")))?;
    let mut request = Request::builder()
        .method(method)
        .uri(format!("{}{path}", base.prefix))
        .header(HOST, &base.authority);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| StepError::non_retryable(format!("{what}: cannot build the request: {e}")))?;
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
    Ok(body.to_vec())
}

/// `503 Service Unavailable`, or the bare number for a code without a reason.
fn describe(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_checked() {
        let base = parse_base("http://127.0.0.1:8788/api").unwrap();
        assert_eq!(base.authority, "127.0.0.1:8788");
        assert_eq!((base.host.as_str(), base.port), ("127.0.0.1", 8788));
        assert_eq!(base.prefix, "/api");
        let base = parse_base("http://[::1]").unwrap();
        assert_eq!((base.host.as_str(), base.port), ("::1", 80));
        assert_eq!(base.prefix, "");
        assert!(parse_base("https://example.org").is_err());
        assert!(parse_base("127.0.0.1:8788").is_err());
        assert!(parse_base("http://h/?q=1").is_err());
    }
}
