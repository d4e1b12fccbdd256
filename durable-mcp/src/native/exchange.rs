//! One request to the host, whichever way it came (a connection of the host's own listener, or
//! the application's server through a mounted endpoint): read where it arrives, within the
//! host's limits, into a request a worker thread answers.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};

use super::http::HttpSettings;
use super::owners::WorkerTasks;
#[cfg(feature = "inspector")]
use crate::inspector::{self, INSPECTOR_PATH};
use crate::rpc::{Headers, HttpRequest, HttpResponse, Router};

/// A request read whole (its body only where the host reads one), ready for a worker.
pub(super) struct Inbound {
    method: String,
    path: String,
    query: String,
    headers: Headers,
    body: Vec<u8>,
    /// Who the application says sent it (a mounted endpoint's request extension).
    principal: Option<String>,
    destination: Destination,
}

/// Which part of the host answers a request, by its path.
enum Destination {
    /// The MCP endpoint, `/mcp`.
    Endpoint,
    /// The inspector (its token set), with the path below [`INSPECTOR_PATH`].
    #[cfg(feature = "inspector")]
    Inspector(String),
    /// The well-known metadata, the application's pages, or 404: no body is read.
    Other,
}

impl Destination {
    fn of(path: &str, settings: &HttpSettings) -> Self {
        #[cfg(feature = "inspector")]
        if let Some(rest) = (settings.inspector_token.as_ref())
            .and_then(|_| path.strip_prefix(INSPECTOR_PATH))
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        {
            return Destination::Inspector(rest.to_owned());
        }
        #[cfg(not(feature = "inspector"))]
        let _ = settings;
        if path == "/mcp" {
            Destination::Endpoint
        } else {
            Destination::Other
        }
    }
}

/// Reads `request` (its body too, for the endpoint and the inspector) within the host's size
/// and time limits, or answers the refusal: 413 for a body over the limit, 408 for one too
/// slow. `principal` is whom the application authenticated the sender as.
pub(super) async fn read<B>(
    request: http::Request<B>,
    settings: &HttpSettings,
    principal: Option<String>,
) -> Result<Inbound, HttpResponse>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (head, body) = request.into_parts();
    let path = head.uri.path().to_owned();
    let destination = Destination::of(&path, settings);
    let body = match destination {
        Destination::Other => Vec::new(),
        _ => read_body(body, settings).await?,
    };
    Ok(Inbound {
        method: head.method.as_str().to_owned(),
        headers: Headers::new(
            (head.headers.iter())
                .map(|(name, value)| (name.as_str(), String::from_utf8_lossy(value.as_bytes()))),
        ),
        query: head.uri.query().unwrap_or_default().to_owned(),
        path,
        body,
        principal,
        destination,
    })
}

/// The request's body, within the host's size and time limits (else the answer refusing it).
async fn read_body<B>(body: B, settings: &HttpSettings) -> Result<Vec<u8>, HttpResponse>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (limit, timeout) = (settings.body_limit, settings.limits.body_read_timeout);
    let body = Limited::new(body, limit).collect();
    match tokio::time::timeout(timeout, body).await {
        Ok(Ok(body)) => Ok(body.to_bytes().to_vec()),
        Ok(Err(_)) => Err(HttpResponse::too_large(limit)),
        Err(_) => Err(too_slow(timeout)),
    }
}

/// HTTP 408 for a body that did not arrive within `timeout`; the connection is closed, as
/// the rest of the body may still come.
fn too_slow(timeout: Duration) -> HttpResponse {
    let error = crate::wire::ErrorObject::new(
        crate::wire::code::INVALID_REQUEST,
        format!(
            "the request body did not arrive within {} ms",
            timeout.as_millis()
        ),
    );
    let mut response = HttpResponse::json(408, &crate::wire::jsonrpc::failure(None, &error));
    response.headers.push(("connection", "close".to_owned()));
    response
}

/// The answer to `request`, on the worker thread it was handed to.
pub(super) async fn answer(
    router: &Router,
    #[cfg_attr(not(feature = "inspector"), allow(unused_variables))] inspected: &WorkerTasks,
    settings: &HttpSettings,
    request: Inbound,
) -> HttpResponse {
    let Inbound {
        method,
        path,
        query,
        headers,
        body,
        principal,
        destination,
    } = request;
    match destination {
        #[cfg(feature = "inspector")]
        Destination::Inspector(path) => {
            let Some(token) = &settings.inspector_token else {
                return HttpResponse::empty(404);
            };
            let request = inspector::Request {
                method: &method,
                path: &path,
                query: &query,
                headers: &headers,
                body: &body,
            };
            inspector::handle(inspected, token, request).await
        }
        Destination::Endpoint => {
            let request = HttpRequest {
                method,
                headers,
                body,
            };
            router.handle_as(request, &query, principal).await
        }
        Destination::Other => {
            if let Some(metadata) = router.well_known(&method, &path) {
                return metadata;
            }
            let page =
                (settings.pages.as_deref()).and_then(|pages| pages(&method, &path, &headers));
            page.unwrap_or_else(|| HttpResponse::empty(404))
        }
    }
}
