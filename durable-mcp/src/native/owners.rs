//! Which worker thread owns a task, and how the others reach it.
//!
//! Every worker serves HTTP, so a request for any task may arrive at any of them. Reads
//! (`tasks/get`, `tasks/list`) are answered where they arrive, from the worker's own read
//! connection. What writes a task (its creation, an answer, a cancel) is carried out by the
//! worker that owns the task, the one whose engine runs its activations: the engine's
//! in-flight bookkeeping, which keeps a cancel from settling a task whose body still runs, is
//! per engine, and the wake-up it sets must land in the owner's queue.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_channel::mpsc::UnboundedSender;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::activations::Activations;
#[cfg(feature = "inspector")]
use crate::core::Timestamp;
#[cfg(feature = "inspector")]
use crate::core::control::Operation;
use crate::core::{ChildOutcome, ListPage, ListPosition, TaskSnapshot};
#[cfg(feature = "inspector")]
use crate::inspector::{self, InspectedTasks, TaskFilter};
use crate::runtime::engine::Access;
use crate::runtime::route::changes_from;
use crate::runtime::{
    CreateTask, Engine, LocalBoxFuture, RouteError, TaskChanges, TaskRoute, new_task_id,
};

/// The worker that owns `task_id` among `workers`: FNV-1a of the id, so that every thread
/// agrees without talking.
pub(super) fn owner(task_id: &str, workers: usize) -> usize {
    let hash = task_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    usize::try_from(hash % workers.max(1) as u64).expect("below the worker count")
}

/// A write sent to the worker that owns the task, with where to send its answer.
pub(super) enum Control {
    Create(
        CreateTask,
        oneshot::Sender<Result<TaskSnapshot, RouteError>>,
    ),
    Write {
        task_id: String,
        write: TaskWrite,
        caller: Option<String>,
        reply: oneshot::Sender<Result<(), RouteError>>,
    },
    /// Follow the task: its snapshot now, and each change into `sink`; as the operator (the
    /// inspector, who sees every task) or as `caller`.
    Watch {
        task_id: String,
        caller: Option<String>,
        operator: bool,
        sink: UnboundedSender<TaskSnapshot>,
        reply: oneshot::Sender<Result<TaskSnapshot, RouteError>>,
    },
}

/// A request that wakes an existing task.
pub(super) enum TaskWrite {
    /// `tasks/update`: input responses.
    Update(Value),
    /// `tasks/cancel`.
    Cancel,
    /// An operator's action, from the inspector.
    #[cfg(feature = "inspector")]
    Operate(Operation),
    /// A child task of this one ended.
    ChildEnded {
        /// The key the task started the child under.
        key: String,
        /// How the child ended.
        outcome: ChildOutcome,
    },
}

/// The inboxes of every worker, by index.
pub(super) type Inboxes = Arc<[mpsc::UnboundedSender<Control>]>;

/// The task service of one worker: reads here, writes at the task's owner.
pub(super) struct WorkerTasks {
    pub(super) index: usize,
    pub(super) engine: Rc<Engine>,
    pub(super) activations: Rc<Activations>,
    pub(super) inboxes: Inboxes,
    /// Creation is refused while more tasks than this wait for a slot on this worker.
    pub(super) max_waiting: usize,
}

impl WorkerTasks {
    fn owner_of(&self, task_id: &str) -> usize {
        owner(task_id, self.inboxes.len())
    }

    /// Sends `control` to worker `owner` and waits for its answer.
    async fn at_owner<T>(
        &self,
        owner: usize,
        control: impl FnOnce(oneshot::Sender<Result<T, RouteError>>) -> Control,
    ) -> Result<T, RouteError> {
        let (reply, answer) = oneshot::channel();
        let stopped =
            || RouteError::Failed("the worker that owns this task has stopped".to_owned());
        self.inboxes[owner]
            .send(control(reply))
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Creates the task here, unless too many tasks wait already.
    fn create_here(&self, request: CreateTask) -> Result<TaskSnapshot, RouteError> {
        let now = self.engine.host().clock.now();
        let waiting = self.activations.waiting(now);
        if waiting >= self.max_waiting {
            return Err(busy(waiting));
        }
        self.engine.create_task(request).map_err(RouteError::from)
    }

    /// Carries out `write` here, and moves the task it woke ahead of the waiting ones.
    fn write_here(
        &self,
        task_id: &str,
        write: &TaskWrite,
        caller: Option<&str>,
    ) -> Result<(), RouteError> {
        match write {
            TaskWrite::Update(responses) => self.engine.update(task_id, responses, caller),
            TaskWrite::Cancel => self.engine.cancel(task_id, caller),
            #[cfg(feature = "inspector")]
            TaskWrite::Operate(operation) => self.engine.operate(task_id, operation),
            TaskWrite::ChildEnded { key, outcome } => {
                self.engine.child_ended(task_id, key, outcome)
            }
        }
        .map_err(RouteError::from)?;
        self.activations
            .requested(task_id, self.engine.host().clock.now());
        Ok(())
    }

    /// Watches the task here, where its commits happen: as the operator, or as `caller`.
    fn watch_here(
        &self,
        task_id: &str,
        caller: Option<&str>,
        operator: bool,
        sink: UnboundedSender<TaskSnapshot>,
    ) -> Result<TaskSnapshot, RouteError> {
        let access = match operator {
            true => Access::Engine,
            false => Access::Caller(caller),
        };
        (self.engine)
            .watch(task_id, access, Box::new(sink))
            .map_err(RouteError::from)
    }

    /// Watched at the owner: the engine there makes the task's commits, and sends each
    /// change across threads into this worker's stream.
    async fn watch_at_owner(
        &self,
        task_id: &str,
        caller: Option<&str>,
        operator: bool,
    ) -> Result<TaskChanges, RouteError> {
        let (sink, changes) = futures_channel::mpsc::unbounded();
        let owner = self.owner_of(task_id);
        let first = if owner == self.index {
            self.watch_here(task_id, caller, operator, sink)?
        } else {
            self.at_owner(owner, |reply| Control::Watch {
                task_id: task_id.to_owned(),
                caller: caller.map(str::to_owned),
                operator,
                sink,
                reply,
            })
            .await?
        };
        Ok(changes_from(first, changes))
    }

    /// Carries out `write` at the task's owner.
    async fn write(
        &self,
        task_id: &str,
        write: TaskWrite,
        caller: Option<&str>,
    ) -> Result<(), RouteError> {
        let owner = self.owner_of(task_id);
        if owner == self.index {
            return self.write_here(task_id, &write, caller);
        }
        self.at_owner(owner, |reply| Control::Write {
            task_id: task_id.to_owned(),
            write,
            caller: caller.map(str::to_owned),
            reply,
        })
        .await
    }

    /// Carries out the writes other workers send here, for as long as they can send.
    pub(super) async fn serve_inbox(self: Rc<Self>, mut inbox: mpsc::UnboundedReceiver<Control>) {
        while let Some(control) = inbox.recv().await {
            // A sender that went away (its client hung up) needs no answer.
            match control {
                Control::Create(request, reply) => {
                    let _ = reply.send(self.create_here(request));
                }
                Control::Write {
                    task_id,
                    write,
                    caller,
                    reply,
                } => {
                    let _ = reply.send(self.write_here(&task_id, &write, caller.as_deref()));
                }
                Control::Watch {
                    task_id,
                    caller,
                    operator,
                    sink,
                    reply,
                } => {
                    let watched = self.watch_here(&task_id, caller.as_deref(), operator, sink);
                    let _ = reply.send(watched);
                }
            }
        }
    }
}

/// A creation refused because `waiting` tasks wait for a slot already: the client is to try
/// again after [`BUSY_RETRY_AFTER`].
fn busy(waiting: usize) -> RouteError {
    RouteError::Busy {
        message: format!(
            "the server is busy: {waiting} tasks wait to run before a new one; nothing was \
             created; try again in {} s",
            BUSY_RETRY_AFTER.as_secs()
        ),
        retry_after: BUSY_RETRY_AFTER,
    }
}

/// When to try again a creation refused for a full queue.
const BUSY_RETRY_AFTER: Duration = Duration::from_secs(1);

impl TaskRoute for WorkerTasks {
    fn create(
        &self,
        mut request: CreateTask,
    ) -> LocalBoxFuture<'_, Result<TaskSnapshot, RouteError>> {
        Box::pin(async move {
            // The id decides the owner, so it is chosen here rather than by the engine: one
            // this worker owns, so that a creation does not cross to another thread (a few
            // draws on average, one per worker).
            let task_id = match &request.task_id {
                Some(id) => id.clone(),
                None => loop {
                    let id = new_task_id().map_err(RouteError::from)?;
                    if self.owner_of(&id) == self.index {
                        break id;
                    }
                },
            };
            request.task_id = Some(task_id.clone());
            let owner = self.owner_of(&task_id);
            if owner == self.index {
                return self.create_here(request);
            }
            self.at_owner(owner, |reply| Control::Create(request, reply))
                .await
        })
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskSnapshot, RouteError>> {
        let snapshot = self.engine.get(task_id, caller).map_err(RouteError::from);
        Box::pin(std::future::ready(snapshot))
    }

    fn update<'a>(
        &'a self,
        task_id: &'a str,
        responses: &'a Value,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        let update = TaskWrite::Update(responses.clone());
        Box::pin(self.write(task_id, update, caller))
    }

    fn cancel<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        Box::pin(self.write(task_id, TaskWrite::Cancel, caller))
    }

    fn list<'a>(
        &'a self,
        scope: &'a str,
        after: Option<&'a ListPosition>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<ListPage<TaskSnapshot>, RouteError>> {
        let page = self
            .engine
            .list(scope, after, limit)
            .map_err(RouteError::from);
        Box::pin(std::future::ready(page))
    }

    fn child_ended<'a>(
        &'a self,
        parent_id: &'a str,
        key: &'a str,
        outcome: &'a ChildOutcome,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        let write = TaskWrite::ChildEnded {
            key: key.to_owned(),
            outcome: outcome.clone(),
        };
        Box::pin(self.write(parent_id, write, None))
    }

    fn pause(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        self.engine.host().timer.delay(duration)
    }

    fn watch<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskChanges, RouteError>> {
        Box::pin(self.watch_at_owner(task_id, caller, false))
    }
}

#[cfg(feature = "inspector")]
impl InspectedTasks for WorkerTasks {
    fn now(&self) -> Timestamp {
        self.engine.host().clock.now()
    }

    fn tasks<'a>(
        &'a self,
        filter: &'a TaskFilter,
        after: Option<&'a ListPosition>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<ListPage<Value>, RouteError>> {
        let page = self
            .engine
            .every_task(after, limit, |task| filter.keeps(task))
            .map(|page| page.map(|task| inspector::summary(&task)))
            .map_err(RouteError::from);
        Box::pin(std::future::ready(page))
    }

    fn task<'a>(
        &'a self,
        task_id: &'a str,
    ) -> LocalBoxFuture<'a, Result<Option<Value>, RouteError>> {
        let task = self.engine.journal(task_id).map_err(RouteError::from);
        Box::pin(std::future::ready(
            task.map(|state| state.as_ref().map(inspector::detail)),
        ))
    }

    fn operate<'a>(
        &'a self,
        task_id: &'a str,
        operation: Operation,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        Box::pin(self.write(task_id, TaskWrite::Operate(operation), None))
    }

    fn watch<'a>(
        &'a self,
        task_id: &'a str,
    ) -> LocalBoxFuture<'a, Result<TaskChanges, RouteError>> {
        Box::pin(self.watch_at_owner(task_id, None, true))
    }
}

#[cfg(test)]
mod tests {
    use super::owner;

    #[test]
    fn owners_spread_ids_over_every_worker_and_one_worker_owns_all() {
        let ids: Vec<String> = (0..1000).map(|i| format!("task-{i}")).collect();
        let mut counts = [0_usize; 2];
        for id in &ids {
            counts[owner(id, 2)] += 1;
            assert_eq!(owner(id, 1), 0);
            assert_eq!(owner(id, 2), owner(id, 2));
        }
        assert!(counts.iter().all(|count| *count > 400), "{counts:?}");
    }
}
