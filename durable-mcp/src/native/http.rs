//! The host's HTTP: the accept loop that hands connections to the workers, each worker's
//! connections under the host's limits, and the translation between hyper's requests and
//! responses and the router's.

use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::limits::{AcceptBackoff, ConnectionLimits, ConnectionSlots, Slot};
use super::owners::WorkerTasks;
#[cfg(feature = "inspector")]
use crate::inspector::{self, INSPECTOR_PATH};
use crate::rpc::sse::EventStream;
use crate::rpc::{Headers, HttpRequest, HttpResponse, Router};

/// Answers requests outside the MCP endpoint: see [`NativeHost::pages`](super::NativeHost::pages).
pub(super) type PageFn = dyn Fn(&str, &str, &Headers) -> Option<HttpResponse> + Send + Sync;

/// What every connection of a worker is held to.
#[derive(Clone)]
pub(super) struct HttpSettings {
    pub(super) body_limit: usize,
    pub(super) limits: ConnectionLimits,
    pub(super) pages: Option<Arc<PageFn>>,
    /// The inspector's token; without one the inspector's paths answer 404.
    #[cfg(feature = "inspector")]
    pub(super) inspector_token: Option<Arc<str>>,
    /// Whether the host listens on an address other machines reach (not loopback).
    pub(super) open_to_network: bool,
}

/// A connection the accept loop handed to a worker, with its place under the cap.
pub(super) struct Accepted {
    pub(super) stream: std::net::TcpStream,
    pub(super) slot: Slot,
}

/// The host's one accept loop: takes a connection once the host is under its cap and hands it
/// to the worker with the fewest open connections, for as long as it is polled (the host drops it
/// to stop accepting). One loop rather
/// than one per worker, because workers racing on one socket split a burst of connections
/// unevenly, and a worker with most of them would serve for all.
pub(super) async fn accept_connections(
    listener: TcpListener,
    slots: Arc<ConnectionSlots>,
    workers: Vec<mpsc::UnboundedSender<Accepted>>,
) {
    let mut backoff = AcceptBackoff::default();
    loop {
        // At the cap, wait for a connection to close before taking another.
        let slot = slots.acquire().await;
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // A connection that failed before we saw it (reset, out of descriptors).
            Err(error) => {
                backoff.wait(&error).await;
                continue;
            }
        };
        backoff.reset();
        let _ = stream.set_nodelay(true);
        let Ok(stream) = stream.into_std() else {
            continue;
        };
        // A worker that has stopped drops the connection, and its slot with it.
        let _ = workers[slot.worker()].send(Accepted { stream, slot });
    }
}

/// Serves each connection handed to this worker in a local task, until `stop` completes.
pub(super) async fn serve_connections(
    mut connections: mpsc::UnboundedReceiver<Accepted>,
    router: Rc<Router>,
    inspected: Rc<WorkerTasks>,
    settings: HttpSettings,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let limits = settings.limits;
    let mut http = http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
        let accepted = tokio::select! {
            accepted = connections.recv() => match accepted {
                Some(accepted) => accepted,
                None => break,
            },
            () = &mut stop => break,
        };
        let Accepted { stream, slot } = accepted;
        let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
            continue;
        };
        let (router, settings) = (Rc::clone(&router), settings.clone());
        let inspected = Rc::clone(&inspected);
        let http = http.clone();
        tokio::task::spawn_local(async move {
            let service = service_fn(move |request| {
                let (router, settings) = (Rc::clone(&router), settings.clone());
                let inspected = Rc::clone(&inspected);
                async move {
                    let response = answer(&router, &inspected, &settings, request).await;
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            // A client that goes away mid-request is not an error worth reporting.
            let _ = http.serve_connection(TokioIo::new(stream), service).await;
            drop(slot);
        });
    }
}

async fn answer(
    router: &Router,
    #[cfg_attr(not(feature = "inspector"), allow(unused_variables))] inspected: &WorkerTasks,
    settings: &HttpSettings,
    request: hyper::Request<Incoming>,
) -> hyper::Response<ResponseBody> {
    let method = request.method().as_str().to_owned();
    let headers = Headers::new(
        request
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str(), String::from_utf8_lossy(value.as_bytes()))),
    );
    #[cfg(feature = "inspector")]
    let inspector_path = (settings.inspector_token.as_ref())
        .and_then(|_| request.uri().path().strip_prefix(INSPECTOR_PATH))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        .map(str::to_owned);
    #[cfg(feature = "inspector")]
    if let (Some(inspector_path), Some(token)) = (inspector_path, &settings.inspector_token) {
        let query = request.uri().query().unwrap_or_default().to_owned();
        let body = match read_body(request, settings).await {
            Ok(body) => body,
            Err(refused) => return reply(refused),
        };
        let request = inspector::Request {
            method: &method,
            path: &inspector_path,
            query: &query,
            headers: &headers,
            body: &body,
        };
        return reply(inspector::handle(inspected, token, request).await);
    }
    let path = request.uri().path();
    if let Some(metadata) = router.well_known(&method, path) {
        return reply(metadata);
    }
    if path != "/mcp" {
        let page = (settings.pages.as_deref()).and_then(|pages| pages(&method, path, &headers));
        return reply(page.unwrap_or_else(|| HttpResponse::empty(404)));
    }
    let query = request.uri().query().unwrap_or_default().to_owned();
    let body = match read_body(request, settings).await {
        Ok(body) => body,
        Err(refused) => return reply(refused),
    };
    let request = HttpRequest {
        method,
        headers,
        body,
    };
    reply(router.handle_with_query(request, &query).await)
}

/// The request's body, within the host's size and time limits (else the answer refusing it).
async fn read_body(
    request: hyper::Request<Incoming>,
    settings: &HttpSettings,
) -> Result<Vec<u8>, HttpResponse> {
    let (limit, limits) = (settings.body_limit, &settings.limits);
    let body = Limited::new(request.into_body(), limit).collect();
    match tokio::time::timeout(limits.body_read_timeout, body).await {
        Ok(Ok(body)) => Ok(body.to_bytes().to_vec()),
        Ok(Err(_)) => Err(HttpResponse::too_large(limit)),
        Err(_) => Err(too_slow(limits.body_read_timeout)),
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

/// A response body: the whole of it, or server-sent events written as they come (dropped
/// with the connection when the client goes away, which ends the stream's work).
enum ResponseBody {
    Full(Option<Bytes>),
    Events(EventStream),
}

impl hyper::body::Body for ResponseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let frame = |bytes: Bytes| Ok(Frame::data(bytes));
        match self.get_mut() {
            ResponseBody::Full(body) => Poll::Ready(body.take().map(frame)),
            ResponseBody::Events(events) => events
                .poll_next_unpin(cx)
                .map(|event| event.map(|event| frame(Bytes::from(event)))),
        }
    }

    // A whole body has a known size, so hyper frames it with Content-Length, not chunks.
    fn size_hint(&self) -> hyper::body::SizeHint {
        match self {
            ResponseBody::Full(body) => {
                let len = body.as_ref().map_or(0, Bytes::len);
                hyper::body::SizeHint::with_exact(u64::try_from(len).unwrap_or(u64::MAX))
            }
            ResponseBody::Events(_) => hyper::body::SizeHint::default(),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ResponseBody::Full(None))
    }
}

fn reply(response: HttpResponse) -> hyper::Response<ResponseBody> {
    let mut builder = hyper::Response::builder().status(response.status);
    for (name, value) in response.headers {
        builder = builder.header(name, value);
    }
    let body = match response.events {
        Some(events) => ResponseBody::Events(events),
        None => ResponseBody::Full(Some(Bytes::from(response.body))),
    };
    builder
        .body(body)
        .unwrap_or_else(|_| hyper::Response::new(ResponseBody::Full(None)))
}
