//! The embedded host: one process, one SQLite file, MCP over HTTP at `/mcp`.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use http_body_util::{BodyExt, Limited};
use hyper::body::Frame;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::clock::{SystemClock, TokioTimer};
use super::limits::{AcceptBackoff, ConnectionLimits, ConnectionSlots};
use super::scheduler::WakeScheduler;
use super::sqlite::SqliteStore;
use crate::rpc::sse::EventStream;
use crate::rpc::{
    CORS_ORIGINS_VAR, Headers, HttpRequest, HttpResponse, INLINE_DEADLINE_VAR, McpServer, Router,
};
use crate::runtime::Engine;
use crate::runtime::Host;

/// The port examples listen on unless `PORT` says otherwise.
pub const DEFAULT_PORT: u16 = 8787;
/// The request body limit unless configured otherwise (4 MiB).
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;
/// The state directory unless configured otherwise, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = ".durable-mcp";
/// The database file inside the state directory.
pub const DATABASE_FILE: &str = "tasks.sqlite3";
/// The lock file inside the state directory: a running host holds an exclusive lock on it
/// (and writes its process id into it), so that no second process uses the directory.
pub const LOCK_FILE: &str = "host.lock";

/// Why the host could not start or stopped.
///
/// Its `Debug` form is its message, so that `fn main() -> Result<(), HostError>` prints
/// `Error: cannot listen on ...` rather than a struct dump.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The state directory or database could not be opened.
    #[error("cannot open the task database: {0}")]
    Store(String),
    /// Another process (or another host in this one) runs on the state directory. Two hosts
    /// on one directory would each treat the other's running steps as crashed and run them
    /// again, and neither would wake the other's tasks.
    #[error(
        "the state directory {} is in use: another process{} holds it (its lock file {}); stop \
         that process, or give this one a directory of its own with DURABLE_MCP_DATA",
        dir.display(),
        holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default(),
        dir.join(LOCK_FILE).display()
    )]
    DataDirInUse {
        /// The state directory.
        dir: PathBuf,
        /// The process id the holder wrote into the lock file, if it could be read.
        holder: Option<u32>,
    },
    /// The listening socket could not be bound.
    #[error("cannot listen on {address}: {source}; is another server on that port? set PORT")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// A configuration value from the environment is unusable.
    #[error("{0}")]
    Config(String),
    /// Any other I/O failure.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl std::fmt::Debug for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The embedded native host of a [`McpServer`].
///
/// # The state directory
///
/// The host keeps every task in [`DATABASE_FILE`] inside its state directory
/// (`./.durable-mcp/` unless [`NativeHost::data_dir`] or `DURABLE_MCP_DATA` says otherwise).
/// One directory serves one process: before it recovers stored tasks, [`NativeHost::bind`]
/// takes an exclusive lock on [`LOCK_FILE`] in the directory and holds it until the host
/// stops, and a second host on the same directory fails with [`HostError::DataDirInUse`]
/// without touching a task. The lock is the operating system's (`flock` on Unix), so it is
/// released however the process ends, a crash included. Run more processes with a directory
/// each.
///
/// ```no_run
/// # fn server() -> durable_mcp::McpServer { durable_mcp::McpServer::new("demo", "0.1.0") }
/// use durable_mcp::native::NativeHost;
///
/// fn main() -> Result<(), durable_mcp::native::HostError> {
///     // PORT and DURABLE_MCP_DATA override the defaults (8787, ./.durable-mcp).
///     NativeHost::new(server()).from_env()?.run()
/// }
/// ```
pub struct NativeHost {
    server: McpServer,
    address: SocketAddr,
    data_dir: PathBuf,
    body_limit: usize,
    limits: ConnectionLimits,
    pages: Option<Pages>,
}

/// Answers requests outside the MCP endpoint: see [`NativeHost::pages`].
type PageFn = dyn Fn(&str, &str, &Headers) -> Option<HttpResponse>;
type Pages = Rc<PageFn>;

impl std::fmt::Debug for NativeHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeHost")
            .field("server", &self.server)
            .field("address", &self.address)
            .field("data_dir", &self.data_dir)
            .field("body_limit", &self.body_limit)
            .field("limits", &self.limits)
            .field("pages", &self.pages.is_some())
            .finish()
    }
}

impl NativeHost {
    /// A host for `server` on `127.0.0.1:8787`, with its state in `./.durable-mcp/`.
    pub fn new(server: McpServer) -> Self {
        NativeHost {
            server,
            address: SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)),
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            body_limit: DEFAULT_BODY_LIMIT,
            limits: ConnectionLimits::default(),
            pages: None,
        }
    }

    /// Reads `PORT` (a port number; `0` picks a free one), `DURABLE_MCP_DATA` (the state
    /// directory), `DURABLE_MCP_CORS_ORIGINS` (origins whose web pages may call the endpoint,
    /// see [`McpServer::allow_origins`]) and `DURABLE_MCP_INLINE_DEADLINE` (see
    /// [`McpServer::inline_deadline`]) from the environment, where set.
    pub fn from_env(mut self) -> Result<Self, HostError> {
        if let Ok(origins) = std::env::var(CORS_ORIGINS_VAR) {
            self.server = self.server.allow_origins(&origins);
        }
        if let Ok(deadline) = std::env::var(INLINE_DEADLINE_VAR) {
            let deadline = crate::core::parse_duration(&deadline).map_err(|error| {
                HostError::Config(format!("{INLINE_DEADLINE_VAR}={deadline:?}: {error}"))
            })?;
            self.server = self.server.inline_deadline(deadline);
        }
        if let Ok(port) = std::env::var("PORT") {
            let port = port.trim().parse().map_err(|_| {
                HostError::Config(format!("PORT={port:?} is not a port number (0-65535)"))
            })?;
            self.address.set_port(port);
        }
        if let Some(dir) = std::env::var_os("DURABLE_MCP_DATA") {
            self.data_dir = PathBuf::from(dir);
        }
        Ok(self)
    }

    /// Listens on `address` instead.
    #[must_use]
    pub fn address(mut self, address: SocketAddr) -> Self {
        self.address = address;
        self
    }

    /// Keeps state in `dir` (created if missing).
    #[must_use]
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = dir.into();
        self
    }

    /// Refuses request bodies over `bytes` with HTTP 413.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Closes a connection that waits longer than `timeout` for a complete request head:
    /// a new connection that sends nothing, one kept alive idle between requests, or one
    /// sending its head too slowly (default [`DEFAULT_HEADER_READ_TIMEOUT`], 10 s).
    ///
    /// [`DEFAULT_HEADER_READ_TIMEOUT`]: super::DEFAULT_HEADER_READ_TIMEOUT
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read_timeout = timeout;
        self
    }

    /// Answers HTTP 408 and closes the connection when a request body takes longer than
    /// `timeout` to arrive after its head (default [`DEFAULT_BODY_READ_TIMEOUT`], 30 s).
    ///
    /// [`DEFAULT_BODY_READ_TIMEOUT`]: super::DEFAULT_BODY_READ_TIMEOUT
    #[must_use]
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body_read_timeout = timeout;
        self
    }

    /// Keeps at most `connections` connections open (at least one; default
    /// [`DEFAULT_MAX_CONNECTIONS`], 256). At the cap the host accepts no new connection until
    /// one closes; the operating system queues them meanwhile.
    ///
    /// [`DEFAULT_MAX_CONNECTIONS`]: super::DEFAULT_MAX_CONNECTIONS
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.limits.max_connections = connections;
        self
    }

    /// Serves requests to paths other than `/mcp` with `pages`, which gets the method, the
    /// path (without the query) and the headers, and answers, or `None` for 404: a web page,
    /// its assets, a health check. Without it every other path is 404. The Host and Origin
    /// checks of the MCP endpoint do not apply here: a page that changes anything must check
    /// them itself.
    #[must_use]
    pub fn pages(
        mut self,
        pages: impl Fn(&str, &str, &Headers) -> Option<HttpResponse> + 'static,
    ) -> Self {
        self.pages = Some(Rc::new(pages));
        self
    }

    /// Runs the host on a new single-threaded runtime until Ctrl-C (or SIGTERM), printing the
    /// URL it serves.
    pub fn run(self) -> Result<(), HostError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async move {
            let listening = self.bind().await?;
            println!("durable-mcp: serving MCP at {}", listening.url());
            listening.serve_until(shutdown_signal()).await
        })
    }

    /// Locks the state directory, opens the database, recovers stored tasks and binds the
    /// socket. Call inside a `tokio::task::LocalSet`.
    ///
    /// # Errors
    ///
    /// [`HostError::DataDirInUse`] if another host holds the state directory; see
    /// [the state directory](NativeHost#the-state-directory).
    pub async fn bind(self) -> Result<Listening, HostError> {
        std::fs::create_dir_all(&self.data_dir).map_err(|e| {
            HostError::Store(format!(
                "cannot create the state directory {}: {e}",
                self.data_dir.display()
            ))
        })?;
        let lock = lock_data_dir(&self.data_dir)?;
        let store = SqliteStore::open(self.data_dir.join(DATABASE_FILE))
            .map_err(|e| HostError::Store(e.to_string()))?;
        let scheduler = WakeScheduler::new();
        let host = Host {
            store: Rc::new(store),
            clock: Rc::new(SystemClock),
            timer: Rc::new(TokioTimer),
            scheduler: scheduler.clone(),
        };
        let engine = Rc::new(Engine::new(self.server.task_registry(), host));
        engine
            .recover()
            .map_err(|e| HostError::Store(e.to_string()))?;
        let listener = TcpListener::bind(self.address)
            .await
            .map_err(|source| HostError::Bind {
                address: self.address,
                source,
            })?;
        Ok(Listening {
            address: listener.local_addr()?,
            listener,
            router: Rc::new(Router::new(self.server, Rc::clone(&engine))),
            engine,
            scheduler,
            body_limit: self.body_limit,
            limits: self.limits,
            pages: self.pages,
            _lock: lock,
        })
    }
}

/// Takes the state directory's lock, or says who holds it.
fn lock_data_dir(dir: &Path) -> Result<File, HostError> {
    let path = dir.join(LOCK_FILE);
    let cannot = |e: std::io::Error| {
        HostError::Store(format!(
            "cannot lock the state directory with {}: {e}",
            path.display()
        ))
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(cannot)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let holder = file
                .read_to_string(&mut text)
                .ok()
                .and_then(|_| text.trim().parse().ok());
            return Err(HostError::DataDirInUse {
                dir: dir.to_owned(),
                holder,
            });
        }
        Err(TryLockError::Error(e)) => return Err(cannot(e)),
    }
    // For the operator who finds the directory in use: which process holds it.
    file.set_len(0).map_err(cannot)?;
    file.rewind().map_err(cannot)?;
    writeln!(file, "{}", std::process::id()).map_err(cannot)?;
    Ok(file)
}

/// A host bound to its socket, ready to serve.
pub struct Listening {
    address: SocketAddr,
    listener: TcpListener,
    router: Rc<Router>,
    engine: Rc<Engine>,
    scheduler: Rc<WakeScheduler>,
    body_limit: usize,
    limits: ConnectionLimits,
    pages: Option<Pages>,
    /// The state directory's lock, released when the host is dropped.
    _lock: File,
}

impl std::fmt::Debug for Listening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listening")
            .field("address", &self.address)
            .field("body_limit", &self.body_limit)
            .field("limits", &self.limits)
            .field("pages", &self.pages.is_some())
            .finish_non_exhaustive()
    }
}

impl Listening {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The MCP endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Serves requests and fires wake-ups until `shutdown` completes, then stops accepting
    /// and gives running activations a few seconds to settle (an activation cut short runs
    /// again after the next start).
    pub async fn serve_until(self, shutdown: impl Future<Output = ()>) -> Result<(), HostError> {
        let wakes =
            tokio::task::spawn_local(Rc::clone(&self.scheduler).run(Rc::clone(&self.engine)));
        tokio::pin!(shutdown);
        let limits = self.limits;
        let slots = ConnectionSlots::new(limits.max_connections);
        let mut backoff = AcceptBackoff::default();
        let mut http = http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout);
        loop {
            // At the cap, wait for a connection to close before taking another.
            let slot = tokio::select! {
                slot = slots.acquire() => slot,
                () = &mut shutdown => break,
            };
            let (stream, _) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    // A connection that failed before we saw it (reset, out of descriptors).
                    Err(error) => {
                        backoff.wait(&error).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            backoff.reset();
            let _ = stream.set_nodelay(true);
            let (router, limit) = (Rc::clone(&self.router), self.body_limit);
            let pages = self.pages.clone();
            let http = http.clone();
            tokio::task::spawn_local(async move {
                let service = service_fn(move |request| {
                    let (router, pages) = (Rc::clone(&router), pages.clone());
                    async move {
                        let response =
                            answer(&router, pages.as_deref(), request, limit, &limits).await;
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                // A client that goes away mid-request is not an error worth reporting.
                let _ = http.serve_connection(TokioIo::new(stream), service).await;
                drop(slot);
            });
        }
        wakes.abort();
        self.scheduler.settle(Duration::from_secs(5)).await;
        Ok(())
    }
}

async fn answer(
    router: &Router,
    pages: Option<&PageFn>,
    request: hyper::Request<Incoming>,
    limit: usize,
    limits: &ConnectionLimits,
) -> hyper::Response<ResponseBody> {
    let method = request.method().as_str().to_owned();
    let headers = Headers::new(
        request
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str(), String::from_utf8_lossy(value.as_bytes()))),
    );
    let path = request.uri().path();
    if path != "/mcp" {
        let page = pages.and_then(|pages| pages(&method, path, &headers));
        return reply(page.unwrap_or_else(|| HttpResponse::empty(404)));
    }
    let body = Limited::new(request.into_body(), limit).collect();
    let body = match tokio::time::timeout(limits.body_read_timeout, body).await {
        Ok(Ok(body)) => body.to_bytes().to_vec(),
        Ok(Err(_)) => return reply(HttpResponse::too_large(limit)),
        Err(_) => return reply(too_slow(limits.body_read_timeout)),
    };
    reply(
        router
            .handle(HttpRequest {
                method,
                headers,
                body,
            })
            .await,
    )
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

/// Completes on Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    println!("durable-mcp: shutting down");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(dir: &Path) -> NativeHost {
        NativeHost::new(McpServer::new("lock-test", "0.0.0"))
            .address(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .data_dir(dir)
    }

    #[test]
    fn one_state_directory_serves_one_host_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let first = host(dir.path()).bind().await.unwrap();
            let error = host(dir.path()).bind().await.unwrap_err();
            let HostError::DataDirInUse { dir: named, holder } = &error else {
                panic!("expected DataDirInUse, got {error}");
            };
            assert_eq!(named, dir.path());
            assert_eq!(*holder, Some(std::process::id()));
            let message = error.to_string();
            assert!(
                message.contains(&dir.path().display().to_string()),
                "{message}"
            );
            assert!(message.contains("another process"), "{message}");

            // Another directory is free, and so is this one once the first host is gone.
            let other = tempfile::tempdir().unwrap();
            drop(host(other.path()).bind().await.unwrap());
            drop(first);
            drop(host(dir.path()).bind().await.unwrap());
        });
    }
}
