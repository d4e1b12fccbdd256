//! One worker thread of the native host: a single-threaded tokio runtime that serves the HTTP
//! connections handed to it and runs the activations of the tasks it owns, so that task bodies
//! need no `Send` bound. The server is built on the thread, from the host's factory.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::activations::Activations;
use super::clock::{SystemClock, TokioTimer};
use super::http::{Handed, HttpSettings, serve_handed};
#[cfg(feature = "oauth")]
use super::outbound::NativeOutbound;
use super::owners::{Control, Inboxes, WorkerTasks};
use super::server::OpenStore;
use super::sqlite::SqliteStore;
use crate::rpc::listeners::Listeners;
use crate::rpc::{McpServer, Router};
use crate::runtime::{Engine, Host, Store};

/// Builds the server a worker serves; called once on each worker thread.
pub(super) type ServerFactory = Arc<dyn Fn() -> McpServer + Send + Sync>;

/// How long a stopping worker waits for its running activations to settle. An activation cut
/// short runs again after the next start.
const SETTLE_ON_STOP: Duration = Duration::from_secs(5);

/// Where a worker's store comes from.
pub(super) enum StoreHandle {
    /// A handle on the host's SQLite file, opened by the host.
    Sqlite(SqliteStore),
    /// The application's store, opened on the worker's thread (see [`NativeHost::store`]).
    ///
    /// [`NativeHost::store`]: super::NativeHost::store
    Open(OpenStore),
}

impl StoreHandle {
    fn open(self) -> std::io::Result<Rc<dyn Store>> {
        match self {
            StoreHandle::Sqlite(store) => Ok(Rc::new(store)),
            StoreHandle::Open(open) => open().map_err(|error| {
                std::io::Error::other(format!("cannot open the task store: {error}"))
            }),
        }
    }
}

/// Everything one worker thread starts from.
pub(super) struct Worker {
    pub(super) index: usize,
    pub(super) server: ServerFactory,
    pub(super) store: StoreHandle,
    /// The connections the accept loop hands this worker, and the requests a mounted
    /// endpoint does.
    pub(super) handed: mpsc::UnboundedReceiver<Handed>,
    pub(super) inbox: mpsc::UnboundedReceiver<Control>,
    pub(super) inboxes: Inboxes,
    /// The ids of the stored tasks this worker owns, oldest first.
    pub(super) recovered: Vec<String>,
    pub(super) max_activations: usize,
    pub(super) max_waiting: usize,
    pub(super) http: HttpSettings,
    pub(super) stop: watch::Receiver<bool>,
    /// The host's listen streams, shared by every worker.
    pub(super) listeners: Listeners,
    /// Told once the worker has opened its store and serves.
    pub(super) serving: oneshot::Sender<()>,
}

impl Worker {
    /// Runs the worker on the calling thread until the host stops.
    pub(super) fn run(self) -> std::io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, self.serve())
    }

    async fn serve(self) -> std::io::Result<()> {
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut server = (self.server)();
        #[cfg(feature = "oauth")]
        server.reach_authorization_servers(Rc::new(NativeOutbound::new()));
        if self.index == 0 && self.http.open_to_network && !server.checks_callers() {
            tracing::warn!(
                target: crate::core::trace::TARGET,
                "this host listens beyond loopback and checks no caller: anyone who reaches it \
                 can start, read, answer and cancel its tasks. Set DURABLE_MCP_OAUTH_ISSUER and \
                 DURABLE_MCP_OAUTH_RESOURCE (docs/authorization.md), or listen on 127.0.0.1"
            );
        }
        let store = self.store.open()?;
        let _ = self.serving.send(());
        let activations = Activations::new(self.max_activations);
        let host = Host {
            store,
            clock: Rc::new(SystemClock),
            timer: Rc::new(TokioTimer),
            scheduler: activations.clone(),
        };
        let engine = Rc::new(Engine::new(server.task_registry(), host));
        activations.recover(self.recovered);
        let tasks = Rc::new(WorkerTasks {
            index: self.index,
            engine: Rc::clone(&engine),
            activations: Rc::clone(&activations),
            inboxes: self.inboxes,
            max_waiting: self.max_waiting,
        });
        // The engine starts and cancels child tasks, and tells parents, at their owners.
        let route = Rc::downgrade(&tasks);
        engine.reach_tasks_through(route);
        tokio::task::spawn_local(Rc::clone(&tasks).serve_inbox(self.inbox));
        let wakes = tokio::task::spawn_local(Rc::clone(&activations).run(engine));
        let inspected = Rc::clone(&tasks);
        let router = Router::with_tasks(server, tasks).with_listeners(self.listeners.clone());
        let router = Rc::new(router);
        let mut stop = self.stop;
        let stopped = async move {
            let _ = stop.wait_for(|stop| *stop).await;
        };
        serve_handed(self.handed, router, inspected, self.http, stopped).await;
        drain_streams(&self.listeners).await;
        wakes.abort();
        activations.settle(SETTLE_ON_STOP).await;
        Ok(())
    }
}

/// How long a stopping worker gives its listen streams to send their last response.
const STREAMS_END_WITHIN: Duration = Duration::from_secs(1);

/// Waits until the host's listen streams, told to end, have ended (or a second has passed),
/// so that their clients read a graceful end rather than a dropped connection.
async fn drain_streams(listeners: &Listeners) {
    let deadline = tokio::time::Instant::now() + STREAMS_END_WITHIN;
    while listeners.open() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
