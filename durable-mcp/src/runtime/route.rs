//! The task route: how a host reaches any of its tasks, wherever the task runs.
//!
//! The router sends task creation and the `tasks/*` methods through it, and an engine reaches
//! other tasks through it (a child to start or cancel, a parent to tell that its child ended).
//! There is one port and one transport per host: [`Engine::reach_own_tasks`] for one engine over
//! its own store, the native host's worker threads (each task at the thread that owns it), the
//! Cloudflare host's Durable Objects (each task in its own object). Errors are the engine's,
//! sorted by what the caller can do about them; HTTP is the router's business.

use std::rc::Rc;
use std::time::Duration;

use serde_json::Value;

use super::engine::{CreateTask, Engine};
use super::ports::LocalBoxFuture;
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

/// Every task in one engine's own store, reached in process.
struct OwnTasks {
    engine: Rc<Engine>,
}

impl Engine {
    /// Makes this engine reach the tasks it starts and tells (children, parents) in its own
    /// store, and returns that route, for a router over the engine. The engine holds the
    /// route weakly: keep the returned route as long as the engine runs tasks.
    pub fn reach_own_tasks(self: &Rc<Self>) -> Rc<dyn TaskRoute> {
        let route: Rc<dyn TaskRoute> = Rc::new(OwnTasks {
            engine: Rc::clone(self),
        });
        self.reach_tasks_through(Rc::downgrade(&route));
        route
    }
}

/// An engine call as a route's answer, ready at once.
fn ready<'a, T: 'a>(result: Result<T, EngineError>) -> LocalBoxFuture<'a, Result<T, RouteError>> {
    Box::pin(std::future::ready(result.map_err(RouteError::from)))
}

impl TaskRoute for OwnTasks {
    fn create(&self, request: CreateTask) -> LocalBoxFuture<'_, Result<TaskSnapshot, RouteError>> {
        ready(self.engine.create_task(request))
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskSnapshot, RouteError>> {
        ready(self.engine.get(task_id, caller))
    }

    fn update<'a>(
        &'a self,
        task_id: &'a str,
        responses: &'a Value,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        ready(self.engine.update(task_id, responses, caller))
    }

    fn cancel<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        ready(self.engine.cancel(task_id, caller))
    }

    fn list<'a>(
        &'a self,
        scope: &'a str,
        after: Option<&'a ListPosition>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<ListPage<TaskSnapshot>, RouteError>> {
        ready(self.engine.list(scope, after, limit))
    }

    fn child_ended<'a>(
        &'a self,
        parent_id: &'a str,
        key: &'a str,
        outcome: &'a ChildOutcome,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        ready(self.engine.child_ended(parent_id, key, outcome))
    }

    fn pause(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        self.engine.host().timer.delay(duration)
    }
}
