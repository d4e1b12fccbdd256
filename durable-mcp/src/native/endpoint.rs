//! The host's MCP endpoint as a tower `Service` (feature `tower`), mounted in the application's
//! own server: requests arrive on the application's runtime, are read there, and are handed to
//! the host's worker threads, which answer them as they answer their own connections (task
//! bodies stay on those threads, so they need no `Send`). A streamed answer crosses back
//! through a bounded channel.

use std::convert::Infallible;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::BoxBody;
use tokio::sync::{mpsc, oneshot};

use super::body::{self, Body};
use super::exchange::{self, Inbound};
use super::http::{Handed, HttpSettings};
use super::owners::WorkerTasks;
use super::pool::WorkerPool;
use super::server::{HostError, NativeHost};
use crate::rpc::listeners::Listeners;
use crate::rpc::sse::EventStream;
use crate::rpc::{HttpResponse, Router};

/// How many events of a stream may wait for the application's server to send them; the
/// stream waits while they do.
const EVENTS_IN_FLIGHT: usize = 16;

impl NativeHost {
    /// Starts the host without a listener of its own, for its endpoint to be mounted in the
    /// application's server (an axum `Router`, any tower-based server): locks the state
    /// directory, opens the store, starts the worker threads and waits until each serves.
    /// The application's tokio runtime then carries the requests; the workers run the tasks.
    ///
    /// ```no_run
    /// # async fn run(server: fn() -> durable_mcp::McpServer) -> Result<(), Box<dyn std::error::Error>> {
    /// # let app = |_: durable_mcp::native::Endpoint| ();
    /// # let serve = |_: (), _: std::future::Ready<()>| async { Ok::<(), std::io::Error>(()) };
    /// # let signal = std::future::ready(());
    /// use durable_mcp::native::NativeHost;
    ///
    /// let endpoint = NativeHost::new(server).from_env()?.mount().await?;
    /// // axum: Router::new().route_service("/mcp", endpoint.clone()), beside the
    /// // application's routes and behind its middleware.
    /// let app = app(endpoint.clone());
    /// // axum::serve(listener, app).with_graceful_shutdown(endpoint.graceful(signal))
    /// serve(app, signal).await?;
    /// endpoint.shutdown().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// What the host's own listener does the application's server does now: the address, the
    /// connection cap and the header read timeout are its own. The endpoint still holds each
    /// request to the host's [body limit](Self::body_limit) and
    /// [body read timeout](Self::body_read_timeout), checks `Origin` and `Host`, and checks
    /// callers as the server says (OAuth, its `authenticate` hook, or [`Authenticated`]).
    /// The host does not know where the application listens, so it cannot warn, as
    /// [`bind`](Self::bind) does, when a server that checks no caller is open to the network.
    ///
    /// # Errors
    ///
    /// What [`bind`](Self::bind) refuses, but a socket: the state directory in use, a store
    /// that cannot be opened (here or on a worker thread).
    pub async fn mount(self) -> Result<Endpoint, HostError> {
        let (parts, lock) = self.prepare()?;
        parts.announce("(mounted in the application's server)", "");
        let settings = parts.http.clone();
        let mut pool = WorkerPool::start(parts)?;
        pool.serving().await?;
        Ok(Endpoint {
            shared: Arc::new(Shared {
                workers: pool.handed.clone(),
                next: AtomicUsize::new(0),
                settings,
                listeners: pool.listeners.clone(),
                running: Mutex::new(Some(Running { pool, _lock: lock })),
            }),
        })
    }
}

/// Whom the application's own authentication says sent a request: put it in the request's
/// extensions (in axum, `request.extensions_mut().insert(..)` in a middleware) before the
/// request reaches the [`Endpoint`], and the tasks the request creates are bound to it, as
/// with the `authenticate` hook of [`McpServer`](crate::McpServer) (which it replaces for
/// that request): only requests that carry the same principal see or change them, and
/// [`TaskContext::principal`](crate::TaskContext::principal) shows it to their bodies.
///
/// A server that checks tokens itself ([`McpServer::oauth`](crate::McpServer::oauth)) still
/// checks every request's token, and binds tasks to the token's principal: this extension
/// does not let a request past that check. A client cannot set it (extensions are not
/// headers): only the application's own code, which therefore must have checked the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated(String);

impl Authenticated {
    /// The caller `principal`: a user id, or `issuer#subject`, whatever names one caller for
    /// good (tasks outlive sessions and tokens).
    pub fn new(principal: impl Into<String>) -> Self {
        Authenticated(principal.into())
    }

    /// The principal.
    pub fn principal(&self) -> &str {
        &self.0
    }
}

/// A host's MCP endpoint, mounted in the application's server (see [`NativeHost::mount`]): a
/// tower `Service` whose futures are `Send`, always ready, that never fails (each refusal is
/// an HTTP answer). Clones share the host, whose worker threads run until
/// [`shutdown`](Self::shutdown).
///
/// It serves `/mcp` (MCP), the Protected Resource Metadata under `/.well-known/` when the
/// server checks tokens, and the task inspector under `/inspector` when its token is set, and
/// answers 404 for any other path. It reads paths whole, so mount it where the path reaches it
/// unchanged: `Router::route_service("/mcp", ..)` for MCP alone, or
/// `Router::fallback_service(..)` for all of them (not `nest_service`, which cuts the prefix
/// off).
///
/// Dropped without `shutdown` (its last clone), it tells the workers to stop and does not wait
/// for them: their running activations are cut short, and run again after the next start.
#[derive(Clone)]
pub struct Endpoint {
    shared: Arc<Shared>,
}

struct Shared {
    workers: Vec<mpsc::UnboundedSender<Handed>>,
    /// The worker the next request goes to, round robin: any worker answers any request (a
    /// write goes on to the task's owner).
    next: AtomicUsize,
    settings: HttpSettings,
    listeners: Listeners,
    /// The workers and the state directory's lock, until [`Endpoint::shutdown`] takes them.
    running: Mutex<Option<Running>>,
}

struct Running {
    pool: WorkerPool,
    /// The state directory's lock, released when the host stops.
    _lock: std::fs::File,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("workers", &self.shared.workers.len())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// The application's shutdown signal, for its server's graceful shutdown (axum's
    /// `with_graceful_shutdown`): once `signal` completes, the endpoint's open
    /// `subscriptions/listen` streams end with their last response, and new ones are
    /// refused, so that the server's wait for open connections ends. Other requests in flight
    /// keep their answers coming; call [`shutdown`](Self::shutdown) once the server returns.
    pub fn graceful(
        &self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let listeners = self.shared.listeners.clone();
        async move {
            signal.await;
            listeners.close();
        }
    }

    /// Stops the host: ends the listen streams, stops the workers (each stops taking
    /// requests, which every clone of the endpoint then answers with HTTP 503, and gives its
    /// running activations a few seconds to settle; one cut short runs again after the next
    /// start) and releases the state directory. A second call does nothing.
    ///
    /// # Errors
    ///
    /// The first error a worker stopped with, if one failed while serving.
    pub async fn shutdown(self) -> Result<(), HostError> {
        let running = (self.shared.running.lock())
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match running {
            Some(Running { pool, _lock }) => pool.stop().await,
            None => Ok(()),
        }
    }
}

impl<B> tower_service::Service<http::Request<B>> for Endpoint
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = http::Response<BoxBody<Bytes, Infallible>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move { Ok(shared.answer(request).await.map(BoxBody::new)) })
    }
}

/// An answer on its way back to the application's server.
type Answer = http::Response<Body<Received>>;

impl Shared {
    async fn answer<B>(&self, request: http::Request<B>) -> Answer
    where
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let principal = (request.extensions().get::<Authenticated>())
            .map(|authenticated| authenticated.0.clone());
        let request = match exchange::read(request, &self.settings, principal).await {
            Ok(request) => request,
            Err(refused) => return whole(refused),
        };
        let worker = self.next.fetch_add(1, Ordering::Relaxed) % self.workers.len();
        let (reply, answer) = oneshot::channel();
        let job = Job { request, reply };
        if self.workers[worker].send(Handed::Request(job)).is_err() {
            return whole(stopped());
        }
        answer.await.unwrap_or_else(|_| whole(stopped()))
    }
}

/// A whole answer, made before (or instead of) a worker's: it streams nothing.
fn whole(response: HttpResponse) -> Answer {
    body::respond(response, |_| Received(mpsc::channel(1).1))
}

/// HTTP 503 for a request the host can no longer answer: it is stopping, or has stopped.
fn stopped() -> HttpResponse {
    let error = crate::wire::ErrorObject::new(
        crate::wire::code::INTERNAL_ERROR,
        "the MCP host has stopped; try again once the server has restarted",
    );
    let mut response = HttpResponse::json(503, &crate::wire::jsonrpc::failure(None, &error));
    response.headers.push(("retry-after", "1".to_owned()));
    response
}

/// A request handed to a worker, with where its answer goes.
pub(super) struct Job {
    request: Inbound,
    reply: oneshot::Sender<Answer>,
}

/// Answers `job` on the worker thread it was handed to; a streamed answer is pumped across
/// by a local task of its own, for as long as the application's server reads it.
pub(super) async fn serve_job(
    job: Job,
    router: &Router,
    inspected: &WorkerTasks,
    settings: &HttpSettings,
) {
    let response = exchange::answer(router, inspected, settings, job.request).await;
    let mut stream = None;
    let answer = body::respond(response, |events| {
        let (sender, receiver) = mpsc::channel(EVENTS_IN_FLIGHT);
        stream = Some((events, sender));
        Received(receiver)
    });
    if job.reply.send(answer).is_ok()
        && let Some((events, sender)) = stream
    {
        tokio::task::spawn_local(pump(events, sender));
    }
}

/// Sends each event of `events` across, until the stream ends or the application's server
/// drops the body (its client went away), which drops the stream and ends its work.
async fn pump(mut events: EventStream, sender: mpsc::Sender<Bytes>) {
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = sender.closed() => None,
        };
        let Some(event) = event else { break };
        if sender.send(Bytes::from(event)).await.is_err() {
            break;
        }
    }
}

/// The events of a streamed answer, as the worker's pump sends them across.
struct Received(mpsc::Receiver<Bytes>);

impl futures_util::Stream for Received {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.0.poll_recv(cx)
    }
}
