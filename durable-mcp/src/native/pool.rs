//! The host's worker threads, started and stopped as one: what both ways of serving share,
//! the host's own listener ([`Listening`](super::Listening)) and an endpoint mounted in the
//! application's server (`NativeHost::mount`, feature `tower`).

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use super::http::{Handed, HttpSettings};
use super::owners::Inboxes;
use super::server::HostError;
use super::worker::{ServerFactory, StoreHandle, Worker};
use crate::rpc::listeners::{ListenLimits, Listeners};

/// Everything the workers start from, as the host prepared it (state directory locked,
/// stored tasks found).
pub(super) struct HostParts {
    pub(super) server: ServerFactory,
    /// One store per worker: SQLite handles sharing the writer, or the application's store
    /// to open on the worker's thread.
    pub(super) stores: Vec<StoreHandle>,
    /// The stored tasks each worker owns.
    pub(super) recovered: Vec<Vec<String>>,
    /// Per worker.
    pub(super) max_activations: usize,
    pub(super) max_waiting: usize,
    /// Over all workers.
    pub(super) max_streams: usize,
    pub(super) http: HttpSettings,
}

impl HostParts {
    /// Says what the host serves, as it starts (an `info` event): where (`serving`), its
    /// workers, the stored tasks they resume, and where the task inspector is served (below
    /// `origin`, the host's own address or nothing for the application's server), or why not.
    pub(super) fn announce(&self, serving: &str, origin: &str) {
        let stored: usize = self.recovered.iter().map(Vec::len).sum();
        let inspector = self.inspector(origin);
        tracing::info!(
            target: crate::core::trace::TARGET,
            url = %serving,
            workers = self.stores.len(),
            stored_tasks = stored,
            inspector = %inspector,
            "serving MCP"
        );
    }

    /// Where the task inspector is served (with its token set), or why it is not.
    #[cfg(feature = "inspector")]
    fn inspector(&self, origin: &str) -> String {
        match &self.http.inspector_token {
            Some(_) => format!("at {origin}{}", crate::inspector::INSPECTOR_PATH),
            None => format!("off ({} is not set)", crate::settings::INSPECTOR_TOKEN_VAR),
        }
    }

    /// A host built without the `inspector` feature serves none.
    #[cfg(not(feature = "inspector"))]
    fn inspector(&self, _origin: &str) -> String {
        "not built in (durable-mcp's inspector feature is off)".to_owned()
    }
}

/// The running worker threads.
pub(super) struct WorkerPool {
    /// Where to hand each worker connections and requests.
    pub(super) handed: Vec<mpsc::UnboundedSender<Handed>>,
    /// The host's listen streams, shared by every worker.
    pub(super) listeners: Listeners,
    stop: watch::Sender<bool>,
    /// Each worker's end, with its error.
    finished: Vec<oneshot::Receiver<std::io::Result<()>>>,
    /// Each worker's word that it has opened its store and serves.
    ready: Vec<oneshot::Receiver<()>>,
}

impl WorkerPool {
    /// Starts a thread for each worker of `parts`.
    pub(super) fn start(parts: HostParts) -> std::io::Result<WorkerPool> {
        let workers = parts.stores.len();
        let (stop, stopped) = watch::channel(false);
        let (senders, inboxes): (Vec<_>, Vec<_>) =
            (0..workers).map(|_| mpsc::unbounded_channel()).unzip();
        let senders: Inboxes = senders.into();
        let (handed, receivers): (Vec<_>, Vec<_>) =
            (0..workers).map(|_| mpsc::unbounded_channel()).unzip();
        // One hub for the listen streams of every worker: a list change made on one thread
        // reaches the streams held on the others.
        let listeners = Listeners::new(ListenLimits {
            max_streams: parts.max_streams,
            ..ListenLimits::DEFAULT
        });
        let (mut finished, mut ready) = (Vec::new(), Vec::new());
        let each =
            (parts.stores.into_iter().zip(inboxes)).zip(receivers.into_iter().zip(parts.recovered));
        for (index, ((store, inbox), (handed, recovered))) in each.enumerate() {
            let (serving, serves) = oneshot::channel();
            let worker = Worker {
                index,
                server: Arc::clone(&parts.server),
                store,
                handed,
                inbox,
                inboxes: Arc::clone(&senders),
                recovered,
                max_activations: parts.max_activations,
                max_waiting: parts.max_waiting,
                http: parts.http.clone(),
                stop: stopped.clone(),
                listeners: listeners.clone(),
                serving,
            };
            let (done, ended) = oneshot::channel();
            std::thread::Builder::new()
                .name(format!("durable-mcp-worker-{index}"))
                .spawn(move || {
                    let _ = done.send(worker.run());
                })?;
            finished.push(ended);
            ready.push(serves);
        }
        Ok(WorkerPool {
            handed,
            listeners,
            stop,
            finished,
            ready,
        })
    }

    /// Waits until every worker has opened its store and serves; a worker that could not
    /// start stops the others, and its error is the answer.
    pub(super) async fn serving(&mut self) -> Result<(), HostError> {
        for ready in std::mem::take(&mut self.ready) {
            if ready.await.is_err() {
                let _ = self.stop.send(true);
                return Err(self.wait().await.err().unwrap_or_else(|| {
                    HostError::Io(std::io::Error::other(
                        "a worker thread stopped as it started",
                    ))
                }));
            }
        }
        Ok(())
    }

    /// Completes when the first worker ends: before the host stops, one failed.
    pub(super) async fn first_end(&mut self) {
        let _ = futures_util::future::select_all(self.finished.iter_mut()).await;
    }

    /// Ends the listen streams gracefully (each with its `complete` response) and refuses new
    /// ones: a held stream would keep its connection, and a graceful server shutdown, open.
    pub(super) fn end_streams(&self) {
        self.listeners.close();
    }

    /// Stops the workers: each stops taking connections and requests, and gives its running
    /// activations a few seconds to settle (one cut short runs again after the next start).
    /// The first worker's error, if one failed.
    pub(super) async fn stop(mut self) -> Result<(), HostError> {
        self.end_streams();
        let _ = self.stop.send(true);
        self.wait().await
    }

    async fn wait(&mut self) -> Result<(), HostError> {
        let mut outcome = Ok(());
        for ended in std::mem::take(&mut self.finished) {
            let result = match ended.await {
                Ok(result) => result.map_err(HostError::Io),
                Err(_) => Err(HostError::Io(std::io::Error::other(
                    "a worker thread panicked; see the message above",
                ))),
            };
            if outcome.is_ok() {
                outcome = result;
            }
        }
        outcome
    }
}
