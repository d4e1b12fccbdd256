//! The host's HTTP: the accept loop that hands connections to the workers, each worker's
//! connections under the host's limits, and the translation of the router's responses into
//! hyper's.

use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::body;
#[cfg(feature = "tower")]
use super::endpoint::{self, Job};
use super::exchange;
use super::limits::{AcceptBackoff, ConnectionLimits, ConnectionSlots, Slot};
use super::owners::WorkerTasks;
use crate::rpc::{Headers, HttpResponse, Router};

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

/// What a worker is handed to serve.
pub(super) enum Handed {
    /// A connection of the host's own listener.
    Connection(Accepted),
    /// A request that came through the application's server (a mounted endpoint).
    #[cfg(feature = "tower")]
    Request(Job),
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
    workers: Vec<mpsc::UnboundedSender<Handed>>,
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
        let _ = workers[slot.worker()].send(Handed::Connection(Accepted { stream, slot }));
    }
}

/// Serves each connection and request handed to this worker in a local task, until `stop`
/// completes.
pub(super) async fn serve_handed(
    mut handed: mpsc::UnboundedReceiver<Handed>,
    router: Rc<Router>,
    inspected: Rc<WorkerTasks>,
    settings: HttpSettings,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut http = http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(settings.limits.header_read_timeout);
    loop {
        let next = tokio::select! {
            next = handed.recv() => match next {
                Some(next) => next,
                None => break,
            },
            () = &mut stop => break,
        };
        let (router, settings) = (Rc::clone(&router), settings.clone());
        let inspected = Rc::clone(&inspected);
        match next {
            Handed::Connection(accepted) => {
                let http = http.clone();
                tokio::task::spawn_local(async move {
                    serve_connection(accepted, &http, router, inspected, settings).await;
                });
            }
            #[cfg(feature = "tower")]
            Handed::Request(job) => {
                tokio::task::spawn_local(async move {
                    endpoint::serve_job(job, &router, &inspected, &settings).await;
                });
            }
        }
    }
}

/// Serves one connection of the host's listener until the client closes it.
async fn serve_connection(
    Accepted { stream, slot }: Accepted,
    http: &http1::Builder,
    router: Rc<Router>,
    inspected: Rc<WorkerTasks>,
    settings: HttpSettings,
) {
    let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
        return;
    };
    let service = service_fn(move |request| {
        let (router, settings) = (Rc::clone(&router), settings.clone());
        let inspected = Rc::clone(&inspected);
        async move {
            let response = match exchange::read(request, &settings, None).await {
                Ok(request) => exchange::answer(&router, &inspected, &settings, request).await,
                Err(refused) => refused,
            };
            Ok::<_, std::convert::Infallible>(body::respond(response, |events| {
                events.map(Bytes::from)
            }))
        }
    });
    // A client that goes away mid-request is not an error worth reporting.
    let _ = http.serve_connection(TokioIo::new(stream), service).await;
    drop(slot);
}
