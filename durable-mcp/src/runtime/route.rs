//! The task route: how a host reaches any of its tasks, wherever the task runs.
//!
//! The router sends task creation and the `tasks/*` methods through it, and an engine reaches
//! other tasks through it (a child to start or cancel, a parent to tell that its child ended).
//! There is one port and one transport per host: an engine over its own store
//! ([`Engine::reach_own_tasks`]), the native host's worker threads (each task at the thread that owns it), the
//! Cloudflare host's Durable Objects (each task in its own object). Errors are the engine's,
//! sorted by what the caller can do about them; HTTP is the router's business.

use std::rc::{Rc, Weak};
use std::time::Duration;

use serde_json::Value;

use super::engine::{Access, CreateTask, Engine};
use super::ports::LocalBoxFuture;
use super::watch::TaskChanges;
use crate::core::{ChildOutcome, EngineError, ListPage, ListPosition, TaskSnapshot};

/// How a host reaches any of its tasks: what the router and the engine need of another task.
///
/// Every operation is idempotent for the same arguments (a creation with a caller-chosen id
/// included), so an implementation that reaches tasks over a network may send any of them
/// again.
///
/// Implemented by the hosts: [`Engine::reach_own_tasks`] for an engine whose store holds every
/// task, the native host's worker threads, and `cloudflare::ObjectTasks`. A host of one's own
/// implements it to put [`Router::with_tasks`](crate::http::Router::with_tasks) over tasks that
/// live elsewhere.
pub trait TaskRoute {
    /// Creates a task and returns its first snapshot.
    fn create(&self, request: CreateTask) -> LocalBoxFuture<'_, Result<TaskSnapshot, RouteError>>;

    /// The task as `caller` may see it.
    fn get<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskSnapshot, RouteError>>;

    /// Records input responses (`tasks/update`).
    fn update<'a>(
        &'a self,
        task_id: &'a str,
        responses: &'a Value,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>>;

    /// Asks the task to stop (`tasks/cancel`).
    fn cancel<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>>;

    /// One page of the tasks created with the listing scope `scope`
    /// ([`CreateTask::list_scope`]), oldest first, strictly after `after` (from the first when
    /// `None`), of at most `limit` tasks (lowered to 100, raised to one). Tasks past their
    /// purge time are never shown.
    fn list<'a>(
        &'a self,
        scope: &'a str,
        after: Option<&'a ListPosition>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<ListPage<TaskSnapshot>, RouteError>>;

    /// Records in the parent task `parent_id` that its child task, started under `key`, ended
    /// with `outcome`, and wakes the parent. Called by the child's engine, not by clients: the
    /// first outcome for a key is kept, and a parent that no longer waits (or is gone) is left
    /// as it is.
    fn child_ended<'a>(
        &'a self,
        parent_id: &'a str,
        key: &'a str,
        outcome: &'a ChildOutcome,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>>;

    /// Waits `duration` on the host's timer (the router's waits between the polls of a task it
    /// follows).
    fn pause(&self, duration: Duration) -> LocalBoxFuture<'static, ()>;

    /// Follows the task as `caller` may see it ([`TaskChanges`]): what a
    /// `subscriptions/listen` stream pushes. The same check as [`get`](Self::get) decides
    /// whether the caller may.
    ///
    /// The provided implementation refuses every task, and listen streams then acknowledge
    /// no task: clients poll `tasks/get` instead.
    fn watch<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskChanges, RouteError>> {
        let _ = (task_id, caller);
        Box::pin(std::future::ready(Err(RouteError::Refused(
            "this host does not push task changes; poll tasks/get".to_owned(),
        ))))
    }
}

/// Why a [`TaskRoute`] operation did not happen, sorted by what the caller can do about it.
/// The message says what went wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// There is no such task, it is not one the caller may see, or it expired.
    #[error("{0}")]
    NotFound(String),
    /// The operation is wrong as asked (an unknown tool, a taken id, responses of the wrong
    /// shape, ...): sending it again will not help.
    #[error("{0}")]
    Refused(String),
    /// The host cannot take the operation now, and did nothing: try again after `retry_after`.
    #[error("{message}")]
    Busy {
        /// Why, and when to try again.
        message: String,
        /// How long to wait before trying again.
        retry_after: Duration,
    },
    /// The host failed (its store, or the way to the task): the operation may have happened or
    /// not, and may pass if sent again.
    #[error("{0}")]
    Failed(String),
}

impl RouteError {
    /// Whether sending the operation again may succeed: the host was busy or failed, rather
    /// than the operation being wrong.
    pub fn may_pass_later(&self) -> bool {
        matches!(self, RouteError::Busy { .. } | RouteError::Failed(_))
    }
}

impl From<EngineError> for RouteError {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::NotFound { .. } | EngineError::Expired { .. } => {
                RouteError::NotFound(error.to_string())
            }
            EngineError::Store(_) => RouteError::Failed(error.to_string()),
            other => RouteError::Refused(other.to_string()),
        }
    }
}

/// Every task in one engine's own store, reached in process: the route of a router over the
/// engine, which keeps the engine alive, and the engine's own, which does not (the engine
/// holds it).
pub(crate) struct OwnTasks {
    engine: Weak<Engine>,
    _keep: Option<Rc<Engine>>,
}

impl OwnTasks {
    /// The route to `engine`'s tasks that keeps `engine` alive (a router's).
    pub(crate) fn keeping(engine: Rc<Engine>) -> Self {
        OwnTasks {
            engine: Rc::downgrade(&engine),
            _keep: Some(engine),
        }
    }

    /// The route to `engine`'s tasks that does not keep it alive (the engine's own).
    pub(crate) fn within(engine: &Rc<Engine>) -> Self {
        OwnTasks {
            engine: Rc::downgrade(engine),
            _keep: None,
        }
    }

    /// Calls `operation` on the engine, unless it was dropped.
    fn ready<'a, T: 'a>(
        &self,
        operation: impl FnOnce(&Engine) -> Result<T, EngineError>,
    ) -> LocalBoxFuture<'a, Result<T, RouteError>> {
        let result = match self.engine.upgrade() {
            Some(engine) => operation(&engine).map_err(RouteError::from),
            None => Err(RouteError::Failed("the engine has stopped".to_owned())),
        };
        Box::pin(std::future::ready(result))
    }
}

impl TaskRoute for OwnTasks {
    fn create(&self, request: CreateTask) -> LocalBoxFuture<'_, Result<TaskSnapshot, RouteError>> {
        self.ready(|engine| engine.create_task(request))
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskSnapshot, RouteError>> {
        self.ready(|engine| engine.get(task_id, caller))
    }

    fn update<'a>(
        &'a self,
        task_id: &'a str,
        responses: &'a Value,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        self.ready(|engine| engine.update(task_id, responses, caller))
    }

    fn cancel<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        self.ready(|engine| engine.cancel(task_id, caller))
    }

    fn list<'a>(
        &'a self,
        scope: &'a str,
        after: Option<&'a ListPosition>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<ListPage<TaskSnapshot>, RouteError>> {
        self.ready(|engine| engine.list(scope, after, limit))
    }

    fn child_ended<'a>(
        &'a self,
        parent_id: &'a str,
        key: &'a str,
        outcome: &'a ChildOutcome,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        self.ready(|engine| engine.child_ended(parent_id, key, outcome))
    }

    fn pause(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        match self.engine.upgrade() {
            Some(engine) => engine.host().timer.delay(duration),
            None => Box::pin(std::future::ready(())),
        }
    }

    fn watch<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskChanges, RouteError>> {
        self.ready(|engine| {
            let (sink, changes) = futures_channel::mpsc::unbounded();
            let first = engine.watch(task_id, Access::Caller(caller), Box::new(sink))?;
            Ok(changes_from(first, changes))
        })
    }
}

/// The changes of a task watched in this process: its first snapshot, then what its engine
/// sends.
pub(crate) fn changes_from(
    first: TaskSnapshot,
    rest: futures_channel::mpsc::UnboundedReceiver<TaskSnapshot>,
) -> TaskChanges {
    use futures_util::StreamExt;
    Box::pin(futures_util::stream::once(std::future::ready(first)).chain(rest))
}
