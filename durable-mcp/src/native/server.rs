//! The embedded host: one process, one SQLite file, MCP over HTTP at `/mcp`.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use std::time::Duration;

use super::http::{HttpSettings, accept_connections};
use super::limits::{
    ConnectionLimits, ConnectionSlots, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
};
use super::owners::owner;
use super::pool::{HostParts, WorkerPool};
use super::sqlite::SqliteStore;
use super::worker::{ServerFactory, StoreHandle};
use crate::rpc::{Headers, HttpResponse, McpServer};
use crate::runtime::{Store, StoreError};
use crate::settings::{
    self, DATA_DIR_VAR, MAX_ACTIVATIONS_VAR, MAX_CONNECTIONS_VAR, MAX_STREAMS_VAR, MAX_WAITING_VAR,
    PORT_VAR, ProcessEnv, ServerSettings, SettingError, Source, WORKERS_VAR,
};

/// The port examples listen on unless `PORT` says otherwise.
pub(crate) const DEFAULT_PORT: u16 = 8787;
/// The request body limit unless configured otherwise (4 MiB).
pub(crate) const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;
/// The state directory unless configured otherwise, relative to the working directory.
pub(crate) const DEFAULT_DATA_DIR: &str = ".durable-mcp";
/// The database file inside the state directory.
pub(crate) const DATABASE_FILE: &str = "tasks.sqlite3";
/// The lock file inside the state directory: a running host holds an exclusive lock on it
/// (and writes its process id into it), so that no second process uses the directory.
pub(crate) const LOCK_FILE: &str = "host.lock";
/// How many task activations run at once unless configured otherwise, over all workers.
pub(crate) const DEFAULT_MAX_ACTIVATIONS: usize = 128;
/// How many due tasks may wait for an activation slot before new tasks are refused, unless
/// configured otherwise, over all workers.
pub(crate) const DEFAULT_MAX_WAITING: usize = 10_000;

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

impl From<SettingError> for HostError {
    fn from(error: SettingError) -> Self {
        HostError::Config(error.0)
    }
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
/// The host keeps every task in [`DATABASE_FILE`](NativeHost::DATABASE_FILE) inside its state directory
/// (`./.durable-mcp/` unless [`NativeHost::data_dir`] or `DURABLE_MCP_DATA` says otherwise).
/// One directory serves one process: before it recovers stored tasks, [`NativeHost::bind`]
/// takes an exclusive lock on [`LOCK_FILE`](NativeHost::LOCK_FILE) in the directory and holds it until the host
/// stops, and a second host on the same directory fails with [`HostError::DataDirInUse`]
/// without touching a task. The lock is the operating system's (`flock` on Unix), so it is
/// released however the process ends, a crash included. Run more processes with a directory
/// each.
///
/// # Threads
///
/// The host runs [`workers`](NativeHost::workers) threads (one per core unless configured
/// otherwise), each a single-threaded runtime, so task bodies need no `Send` bound. Each
/// builds its own [`McpServer`] with the function given to [`NativeHost::new`], serves the
/// connections the host's accept loop hands it (or, mounted in the application's server, the
/// requests its endpoint hands it) and answers reads itself; each task is owned
/// by one worker (by its id), which runs its activations and carries out every write to it.
/// At most
/// [`max_activations`](NativeHost::max_activations) activations run at once; due tasks beyond
/// that wait their turn, and while too many wait, new tasks are refused with HTTP 503 and
/// `Retry-After` (see [`max_waiting`](NativeHost::max_waiting)).
///
/// ```no_run
/// # fn server() -> durable_mcp::McpServer { durable_mcp::McpServer::new("demo", "0.1.0") }
/// use durable_mcp::native::NativeHost;
///
/// fn main() -> Result<(), durable_mcp::native::HostError> {
///     // PORT, DURABLE_MCP_DATA, DURABLE_MCP_WORKERS and DURABLE_MCP_MAX_ACTIVATIONS
///     // override the defaults (8787, ./.durable-mcp, one per core, 128).
///     NativeHost::new(server).from_env()?.run()
/// }
/// ```
pub struct NativeHost {
    server: ServerFactory,
    address: SocketAddr,
    data_dir: PathBuf,
    workers: usize,
    max_activations: usize,
    max_waiting: usize,
    max_streams: usize,
    http: HttpSettings,
    /// A store of the application's, opened on each worker thread; `None`: the SQLite file.
    store: Option<OpenStore>,
}

/// Opens a handle on the application's task store (see [`NativeHost::store`]).
pub(super) type OpenStore = Arc<dyn Fn() -> Result<Rc<dyn Store>, StoreError> + Send + Sync>;

impl std::fmt::Debug for NativeHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeHost")
            .field("address", &self.address)
            .field("data_dir", &self.data_dir)
            .field("workers", &self.workers)
            .field("max_activations", &self.max_activations)
            .field("max_waiting", &self.max_waiting)
            .field("max_streams", &self.max_streams)
            .field("body_limit", &self.http.body_limit)
            .field("limits", &self.http.limits)
            .field("pages", &self.http.pages.is_some())
            .field("own_store", &self.store.is_some())
            .finish_non_exhaustive()
    }
}

impl NativeHost {
    /// The port examples listen on unless `PORT` says otherwise.
    pub const DEFAULT_PORT: u16 = DEFAULT_PORT;
    /// The request body limit unless configured otherwise (4 MiB).
    pub const DEFAULT_BODY_LIMIT: usize = DEFAULT_BODY_LIMIT;
    /// The state directory unless configured otherwise, relative to the working directory.
    pub const DEFAULT_DATA_DIR: &'static str = DEFAULT_DATA_DIR;
    /// The database file inside the state directory.
    pub const DATABASE_FILE: &'static str = DATABASE_FILE;
    /// The lock file inside the state directory: a running host holds an exclusive lock on it
    /// (and writes its process id into it), so that no second process uses the directory.
    pub const LOCK_FILE: &'static str = LOCK_FILE;
    /// How many task activations run at once unless configured otherwise, over all workers.
    pub const DEFAULT_MAX_ACTIVATIONS: usize = DEFAULT_MAX_ACTIVATIONS;
    /// How many due tasks may wait for an activation slot before new tasks are refused,
    /// unless configured otherwise, over all workers.
    pub const DEFAULT_MAX_WAITING: usize = DEFAULT_MAX_WAITING;
    /// How many `subscriptions/listen` streams the host holds open at once unless configured
    /// otherwise, over all workers: half the default connection cap, since each stream holds
    /// a connection (see [`max_streams`](NativeHost::max_streams)).
    pub const DEFAULT_MAX_STREAMS: usize = DEFAULT_MAX_CONNECTIONS / 2;
    /// How long a connection may wait for a complete request head unless configured
    /// otherwise (see [`header_read_timeout`](NativeHost::header_read_timeout)).
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = DEFAULT_HEADER_READ_TIMEOUT;
    /// How long a request body may take to arrive unless configured otherwise (see
    /// [`body_read_timeout`](NativeHost::body_read_timeout)).
    pub const DEFAULT_BODY_READ_TIMEOUT: Duration = DEFAULT_BODY_READ_TIMEOUT;
    /// How many connections may be open at once unless configured otherwise: far below the
    /// usual limit of 1,024 descriptors, which the database and the runtime share (see
    /// [`max_connections`](NativeHost::max_connections)).
    pub const DEFAULT_MAX_CONNECTIONS: usize = DEFAULT_MAX_CONNECTIONS;
}

impl NativeHost {
    /// A host on `127.0.0.1:8787`, with its state in `./.durable-mcp/`, serving the server
    /// `server` builds. Each worker thread calls it once, so it is a function (usually the
    /// crate's `fn server() -> McpServer`, or a closure cloning its configuration) rather than
    /// a server.
    pub fn new(server: impl Fn() -> McpServer + Send + Sync + 'static) -> Self {
        NativeHost {
            server: Arc::new(server),
            address: SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)),
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            workers: std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
            max_activations: DEFAULT_MAX_ACTIVATIONS,
            max_waiting: DEFAULT_MAX_WAITING,
            max_streams: Self::DEFAULT_MAX_STREAMS,
            http: HttpSettings {
                body_limit: DEFAULT_BODY_LIMIT,
                limits: ConnectionLimits::default(),
                pages: None,
                #[cfg(feature = "inspector")]
                inspector_token: None,
                open_to_network: false,
            },
            store: None,
        }
    }

    /// Reads the native host's settings from the environment, where set (the table of
    /// [`crate::settings`] lists them): `PORT` (a port number; `0` picks a free one),
    /// `DURABLE_MCP_DATA` (the state directory), the thread and queue bounds
    /// ([`workers`](Self::workers), [`max_activations`](Self::max_activations),
    /// [`max_waiting`](Self::max_waiting), [`max_streams`](Self::max_streams),
    /// [`max_connections`](Self::max_connections)), the
    /// [inspector's token](Self::inspector_token),
    /// and the settings both hosts apply to the server: MCP authorization (see
    /// [`McpServer::oauth`]; for a server without OAuth of its own), the origins whose web
    /// pages may call the endpoint ([`McpServer::allow_origins`]) and the inline deadline
    /// ([`McpServer::inline_deadline`]).
    ///
    /// # Errors
    ///
    /// [`HostError::Config`] naming a setting whose value is unusable.
    pub fn from_env(mut self) -> Result<Self, HostError> {
        let source = &ProcessEnv;
        // Checked here, so that a bad value stops the host before it serves anyone.
        let shared = ServerSettings::read(source)?;
        if !shared.is_empty() {
            let build = Arc::clone(&self.server);
            self.server = Arc::new(move || shared.apply(build()));
        }
        if let Some(port) = source.get(PORT_VAR) {
            let port = port.trim().parse().map_err(|_| {
                HostError::Config(format!(
                    "{PORT_VAR}={port:?} is not a port number (0-65535)"
                ))
            })?;
            self.address.set_port(port);
        }
        if let Some(dir) = std::env::var_os(DATA_DIR_VAR) {
            self.data_dir = PathBuf::from(dir);
        }
        if let Some(workers) = settings::positive(source, WORKERS_VAR)? {
            self.workers = workers;
        }
        if let Some(max) = settings::positive(source, MAX_ACTIVATIONS_VAR)? {
            self.max_activations = max;
        }
        if let Some(max) = settings::positive(source, MAX_WAITING_VAR)? {
            self.max_waiting = max;
        }
        if let Some(max) = settings::positive(source, MAX_STREAMS_VAR)? {
            self.max_streams = max;
        }
        if let Some(max) = settings::positive(source, MAX_CONNECTIONS_VAR)? {
            self.http.limits.max_connections = max;
        }
        #[cfg(feature = "inspector")]
        if let Some(token) = settings::inspector_token(source)? {
            self.http.inspector_token = Some(token.into());
        }
        #[cfg(not(feature = "inspector"))]
        settings::refuse_without("inspector", source, &settings::INSPECTOR_TOKEN_VARS)?;
        Ok(self)
    }

    /// Serves the task inspector at [`INSPECTOR_PATH`](crate::http::INSPECTOR_PATH), its API
    /// answering only requests with `Authorization: Bearer <token>`: an operator's view of
    /// every task (whoever created it), its journal and input, and cancel, wake and answer.
    /// Off unless given (then the path answers 404). Read from
    /// [`INSPECTOR_TOKEN_VAR`](crate::settings::INSPECTOR_TOKEN_VAR) by
    /// [`from_env`](Self::from_env).
    ///
    /// # Errors
    ///
    /// [`HostError::Config`] for a token shorter than 16 characters or with whitespace or
    /// control characters in it.
    #[cfg(feature = "inspector")]
    pub fn inspector_token(mut self, token: impl Into<String>) -> Result<Self, HostError> {
        let token = token.into();
        settings::check_inspector_token(&token)?;
        self.http.inspector_token = Some(token.into());
        Ok(self)
    }

    /// Runs `workers` worker threads (at least one; default one per core the process may
    /// use). Each serves HTTP and runs the activations of the tasks it owns.
    #[must_use]
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Runs at most `activations` task activations at once over all workers (at least one
    /// per worker; default [`DEFAULT_MAX_ACTIVATIONS`](NativeHost::DEFAULT_MAX_ACTIVATIONS)). A due task beyond them waits for a
    /// free slot: one woken by a request (an answer, a cancel) first, then by wake-up time,
    /// and the tasks found in the store at start in turn with both, so that none is starved.
    #[must_use]
    pub fn max_activations(mut self, activations: usize) -> Self {
        self.max_activations = activations.max(1);
        self
    }

    /// Refuses new tasks with HTTP 503 and `Retry-After` while more than `tasks` due tasks
    /// wait for an activation slot (over all workers; default [`DEFAULT_MAX_WAITING`](NativeHost::DEFAULT_MAX_WAITING)), so
    /// that a client creating tasks faster than the host runs them is told to slow down
    /// instead of piling up work. Nothing is stored for a refused call. Tasks found in the
    /// store at start do not count: they only drain.
    #[must_use]
    pub fn max_waiting(mut self, tasks: usize) -> Self {
        self.max_waiting = tasks.max(1);
        self
    }

    /// Holds at most `streams` `subscriptions/listen` streams open at once, over all workers
    /// (default [`DEFAULT_MAX_STREAMS`](NativeHost::DEFAULT_MAX_STREAMS)); past them a listen
    /// is refused with HTTP 503 and `Retry-After`, and its client polls meanwhile. Each open
    /// stream holds one of the host's connections, so streams are held to half the
    /// [connection cap](Self::max_connections) whatever this says: they never take the
    /// connections other requests need. Read from
    /// [`MAX_STREAMS_VAR`](crate::settings::MAX_STREAMS_VAR) by [`from_env`](Self::from_env).
    #[must_use]
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = streams.max(1);
        self
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

    /// Keeps the tasks in a store of yours instead of the SQLite file in the state directory:
    /// each worker thread calls `open` once, as it starts, for a handle of its own (a
    /// [`Store`] need not be `Send`), and [`bind`](Self::bind) calls it once more to find the
    /// stored tasks to resume. The state directory still holds the host's lock.
    ///
    /// What the store must do:
    /// - pass `testing::store_conformance` (the `testing` feature; docs/testing.md, "Your own
    ///   store"): guarded writes, loads, listings and purges as the engine expects them;
    /// - let every handle see at once what another handle wrote: a task's writes all go
    ///   through the worker that owns it (by its id), but any worker reads any task, and a
    ///   write is acknowledged to the client as soon as `apply` returns;
    /// - belong to this host alone, as the state directory does: two hosts on one store
    ///   would each take the other's running activations for lost ones.
    ///
    /// A handle that cannot be opened stops its worker, and the host with it; one that
    /// cannot be opened at [`bind`](Self::bind) is a [`HostError::Store`].
    #[must_use]
    pub fn store<S, F>(mut self, open: F) -> Self
    where
        S: Store + 'static,
        F: Fn() -> Result<S, StoreError> + Send + Sync + 'static,
    {
        self.store = Some(Arc::new(move || {
            open().map(|store| Rc::new(store) as Rc<dyn Store>)
        }));
        self
    }

    /// Refuses request bodies over `bytes` with HTTP 413.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.http.body_limit = bytes;
        self
    }

    /// Closes a connection that waits longer than `timeout` for a complete request head:
    /// a new connection that sends nothing, one kept alive idle between requests, or one
    /// sending its head too slowly (default [`DEFAULT_HEADER_READ_TIMEOUT`], 10 s).
    ///
    /// [`DEFAULT_HEADER_READ_TIMEOUT`]: NativeHost::DEFAULT_HEADER_READ_TIMEOUT
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.http.limits.header_read_timeout = timeout;
        self
    }

    /// Answers HTTP 408 and closes the connection when a request body takes longer than
    /// `timeout` to arrive after its head (default [`DEFAULT_BODY_READ_TIMEOUT`], 30 s).
    ///
    /// [`DEFAULT_BODY_READ_TIMEOUT`]: NativeHost::DEFAULT_BODY_READ_TIMEOUT
    #[must_use]
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.http.limits.body_read_timeout = timeout;
        self
    }

    /// Keeps at most `connections` connections open (at least one; default
    /// [`DEFAULT_MAX_CONNECTIONS`], 256). At the cap the host accepts no new connection until
    /// one closes; the operating system queues them meanwhile. Each accepted connection goes
    /// to the worker with the fewest open.
    ///
    /// [`DEFAULT_MAX_CONNECTIONS`]: NativeHost::DEFAULT_MAX_CONNECTIONS
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.http.limits.max_connections = connections;
        self
    }

    /// Serves requests to paths other than `/mcp` with `pages`, which gets the method, the
    /// path (without the query) and the headers, and answers, or `None` for 404: a web page,
    /// its assets, a health check. Without it every other path is 404. The Host and Origin
    /// checks of the MCP endpoint do not apply here: a page that changes anything must check
    /// them itself. Every worker thread calls it, hence `Send + Sync`.
    #[must_use]
    pub fn pages(
        mut self,
        pages: impl Fn(&str, &str, &Headers) -> Option<HttpResponse> + Send + Sync + 'static,
    ) -> Self {
        self.http.pages = Some(Arc::new(pages));
        self
    }

    /// Runs the host until Ctrl-C (or SIGTERM), printing the URL it serves.
    ///
    /// Unless the process installed a `tracing` subscriber already, this installs one that
    /// prints the engine's events (and the application's) on stderr: filtered by `RUST_LOG`
    /// (default `info`; `RUST_LOG=info,durable_mcp=debug` adds every step attempt), in the
    /// format [`LOG_FORMAT_VAR`](crate::settings::LOG_FORMAT_VAR) names (`compact` by default,
    /// or `json`). A malformed value of either is a [`HostError::Config`]. Without the
    /// `logging` feature it installs none, and either setting is a [`HostError::Config`].
    pub fn run(self) -> Result<(), HostError> {
        #[cfg(feature = "logging")]
        super::logging::install_from_env()?;
        #[cfg(not(feature = "logging"))]
        crate::settings::refuse_without(
            "logging",
            &ProcessEnv,
            &[
                crate::settings::LOG_FILTER_VAR,
                crate::settings::LOG_FORMAT_VAR,
            ],
        )?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let listening = self.bind().await?;
            println!("durable-mcp: serving MCP at {}", listening.url());
            listening.serve_until(shutdown_signal()).await
        })
    }

    /// Locks the state directory, opens the database, finds the stored tasks (each is
    /// recovered by its worker once serving starts) and binds the socket.
    ///
    /// # Errors
    ///
    /// [`HostError::DataDirInUse`] if another host holds the state directory; see
    /// [the state directory](NativeHost#the-state-directory).
    pub async fn bind(self) -> Result<Listening, HostError> {
        let address = self.address;
        let (mut parts, lock) = self.prepare()?;
        let listener = std::net::TcpListener::bind(address)
            .map_err(|source| HostError::Bind { address, source })?;
        listener.set_nonblocking(true)?;
        parts.http.open_to_network = !address.ip().is_loopback();
        Ok(Listening {
            address: listener.local_addr()?,
            listener,
            parts,
            _lock: lock,
        })
    }

    /// Locks the state directory, opens the store and finds the stored tasks: what the
    /// workers start from, and the lock they run under.
    pub(super) fn prepare(self) -> Result<(HostParts, File), HostError> {
        std::fs::create_dir_all(&self.data_dir).map_err(|e| {
            HostError::Store(format!(
                "cannot create the state directory {}: {e}",
                self.data_dir.display()
            ))
        })?;
        let lock = lock_data_dir(&self.data_dir)?;
        let store_error = |e: StoreError| HostError::Store(e.to_string());
        let workers = self.workers;
        let (stored, stores) = match &self.store {
            None => {
                let store =
                    SqliteStore::open(self.data_dir.join(DATABASE_FILE)).map_err(store_error)?;
                let readers = (0..workers)
                    .map(|_| store.reader().map(StoreHandle::Sqlite))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(store_error)?;
                (store.task_ids().map_err(store_error)?, readers)
            }
            Some(open) => {
                let stored = open().and_then(|store| store.task_ids());
                let handles = (0..workers).map(|_| StoreHandle::Open(Arc::clone(open)));
                (stored.map_err(store_error)?, handles.collect())
            }
        };
        let mut recovered = vec![Vec::new(); workers];
        for task_id in stored {
            recovered[owner(&task_id, workers)].push(task_id);
        }
        let http = self.http;
        let parts = HostParts {
            server: self.server,
            stores,
            recovered,
            max_activations: self.max_activations.div_ceil(workers),
            max_waiting: self.max_waiting.div_ceil(workers),
            // Half the connections at most: streams never take every connection.
            max_streams: (self.max_streams)
                .min(http.limits.max_connections / 2)
                .max(1),
            http,
        };
        Ok((parts, lock))
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
    listener: std::net::TcpListener,
    parts: HostParts,
    /// The state directory's lock, released when the host is dropped.
    _lock: File,
}

impl std::fmt::Debug for Listening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let http = &self.parts.http;
        f.debug_struct("Listening")
            .field("address", &self.address)
            .field("workers", &self.parts.stores.len())
            .field("body_limit", &http.body_limit)
            .field("limits", &http.limits)
            .field("pages", &http.pages.is_some())
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

    /// Starts the worker threads, which serve requests and run activations until `shutdown`
    /// completes; then each stops accepting and gives its running activations a few seconds
    /// to settle (an activation cut short runs again after the next start).
    pub async fn serve_until(self, shutdown: impl Future<Output = ()>) -> Result<(), HostError> {
        let origin = format!("http://{}", self.address);
        self.parts.announce(&self.url(), &origin);
        let workers = self.parts.stores.len();
        let max_connections = self.parts.http.limits.max_connections;
        let mut pool = WorkerPool::start(self.parts)?;
        pool.serving().await?;
        let slots = ConnectionSlots::new(max_connections, workers);
        let listener = tokio::net::TcpListener::from_std(self.listener)?;
        let accepting = accept_connections(listener, slots, pool.handed.clone());
        // A worker that ends before the shutdown failed: stop the others too.
        tokio::select! {
            () = shutdown => {}
            () = pool.first_end() => {}
            () = accepting => {}
        }
        pool.stop().await
    }
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
        NativeHost::new(|| McpServer::new("lock-test", "0.0.0"))
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
