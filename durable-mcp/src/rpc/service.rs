//! Where the router sends the `tasks/*` methods and task creation: to an [`Engine`] in the same
//! process (the native host), or to each task's own Durable Object (the Cloudflare host).

use std::time::Duration;

use serde_json::Value;

use super::cursor::{decode_cursor, encode_cursor};
use super::error::RpcError;
use crate::core::{ChildOutcome, ListPage, TaskSnapshot};
use crate::runtime::Engine;
use crate::runtime::{CreateTask, LocalBoxFuture};

/// One page of a `tasks/list`.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskPage {
    /// The tasks, oldest first (by creation time, then id).
    pub tasks: Vec<TaskSnapshot>,
    /// The cursor of the next page (`nextCursor`); `None` on the last page.
    pub next_cursor: Option<String>,
}

impl From<ListPage<TaskSnapshot>> for TaskPage {
    fn from(page: ListPage<TaskSnapshot>) -> Self {
        TaskPage {
            tasks: page.items,
            next_cursor: page.next.as_ref().map(encode_cursor),
        }
    }
}

/// The task operations the router needs, answered with the error the client is to see.
///
/// Every method is idempotent for the same arguments (creation with a caller-chosen id
/// included), so a host that reaches tasks over a network may retry any of them.
pub trait TaskService {
    /// Creates a task and returns its first snapshot.
    fn create(&self, request: CreateTask) -> LocalBoxFuture<'_, Result<TaskSnapshot, RpcError>>;

    /// The task as `caller` may see it.
    fn get<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskSnapshot, RpcError>>;

    /// Records input responses (`tasks/update`).
    fn update<'a>(
        &'a self,
        task_id: &'a str,
        responses: &'a Value,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RpcError>>;

    /// Asks the task to stop (`tasks/cancel`).
    fn cancel<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RpcError>>;

    /// One page of the tasks created with the listing scope `scope`
    /// ([`CreateTask::list_scope`]), oldest first, starting after `cursor` (a `next_cursor`
    /// of an earlier page; the first page when `None`), of at most `limit` tasks (lowered to
    /// 100, raised to one). Tasks past
    /// their purge time are never shown. A cursor this server did not issue is -32602.
    fn list<'a>(
        &'a self,
        scope: &'a str,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<TaskPage, RpcError>>;

    /// Records in the parent task `parent_id` that its child task, started under `key`, ended
    /// with `outcome`, and wakes the parent. Called by the child's host, not by clients: the
    /// first outcome for a key is kept, and a parent that no longer waits (or is gone) is left
    /// as it is.
    fn child_ended<'a>(
        &'a self,
        parent_id: &'a str,
        key: &'a str,
        outcome: &'a ChildOutcome,
    ) -> LocalBoxFuture<'a, Result<(), RpcError>>;

    /// Waits `duration` (between the polls of an optional task run inline).
    fn pause(&self, duration: Duration) -> LocalBoxFuture<'static, ()>;
}

impl TaskService for Engine {
    fn create(&self, request: CreateTask) -> LocalBoxFuture<'_, Result<TaskSnapshot, RpcError>> {
        let created = self.create_task(request).map_err(RpcError::from_engine);
        Box::pin(std::future::ready(created))
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskSnapshot, RpcError>> {
        let snapshot = Engine::get(self, task_id, caller).map_err(RpcError::from_engine);
        Box::pin(std::future::ready(snapshot))
    }

    fn update<'a>(
        &'a self,
        task_id: &'a str,
        responses: &'a Value,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RpcError>> {
        let updated = Engine::update(self, task_id, responses, caller);
        Box::pin(std::future::ready(updated.map_err(RpcError::from_engine)))
    }

    fn cancel<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RpcError>> {
        let cancelled = Engine::cancel(self, task_id, caller).map_err(RpcError::from_engine);
        Box::pin(std::future::ready(cancelled))
    }

    fn list<'a>(
        &'a self,
        scope: &'a str,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<TaskPage, RpcError>> {
        let page = cursor.map(decode_cursor).transpose().and_then(|after| {
            Engine::list(self, scope, after.as_ref(), limit)
                .map(TaskPage::from)
                .map_err(RpcError::from_engine)
        });
        Box::pin(std::future::ready(page))
    }

    fn child_ended<'a>(
        &'a self,
        parent_id: &'a str,
        key: &'a str,
        outcome: &'a ChildOutcome,
    ) -> LocalBoxFuture<'a, Result<(), RpcError>> {
        let recorded = Engine::child_ended(self, parent_id, key, outcome);
        Box::pin(std::future::ready(recorded.map_err(RpcError::from_engine)))
    }

    fn pause(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        self.host().timer.delay(duration)
    }
}
