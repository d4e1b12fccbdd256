//! The task inspector: a small JSON API and a web page over it, for operators, served by both
//! hosts behind a bearer token (off unless the host is given one).
//!
//! Under the host's inspector path (see [`INSPECTOR_PATH`]):
//!
//! | Request                                   | Answer                                      |
//! |-------------------------------------------|---------------------------------------------|
//! | `GET /`                                   | the page (no data: it asks for the token)   |
//! | `GET /api/tasks?status=&tool=&older_than=&newer_than=&limit=&cursor=` | one page of tasks, oldest first |
//! | `GET /api/tasks/<id>`                     | the task, its journal, input, children      |
//! | `POST /api/tasks/<id>/cancel`             | asks the task to stop, as `tasks/cancel`    |
//! | `POST /api/tasks/<id>/wake`               | runs it now: retries and sleeps are due now |
//! | `POST /api/tasks/<id>/answer` `{"inputResponses": {..}}` | records answers, as `tasks/update` |
//!
//! Every API request needs `Authorization: Bearer <token>`; without it, or with another, the
//! answer is 401 and nothing is read or changed. Parameters are checked before anything is
//! done: an unknown one, a malformed value or a bad body is a 400 that says what to send.

mod api;
mod page;
mod query;
mod view;

use serde_json::json;

use serde_json::Value;

use crate::core::control::Operation;
use crate::core::{ListPage, ListPosition, Timestamp};
use crate::rpc::HttpResponse;
use crate::runtime::{LocalBoxFuture, RouteError, TaskChanges};

pub(crate) use api::{Request, handle};
pub(crate) use query::TaskFilter;
pub(crate) use view::{detail, summary};

/// Where the hosts serve the inspector: the page at this path, the API under `<path>/api/`.
pub const INSPECTOR_PATH: &str = "/__durable-mcp/inspector";

/// What the inspector needs of a host: every task, whoever created it, and an operator's
/// actions on one.
pub(crate) trait InspectedTasks {
    /// The current time, which the age filters count from.
    fn now(&self) -> Timestamp;

    /// One page of the tasks `filter` keeps, each as [`summary`] shows it, oldest first,
    /// strictly after `after`, of at most `limit` tasks (a page may end short of `limit` and
    /// still have a next one).
    fn tasks<'a>(
        &'a self,
        filter: &'a TaskFilter,
        after: Option<&'a ListPosition>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<ListPage<Value>, RouteError>>;

    /// The task as [`detail`] shows it; `None` if there is no such task.
    fn task<'a>(
        &'a self,
        task_id: &'a str,
    ) -> LocalBoxFuture<'a, Result<Option<Value>, RouteError>>;

    /// Carries out `operation` on the task.
    fn operate<'a>(
        &'a self,
        task_id: &'a str,
        operation: Operation,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>>;

    /// Follows the task, whoever it belongs to: its snapshot now and after each change (see
    /// [`TaskChanges`]).
    fn watch<'a>(&'a self, task_id: &'a str)
    -> LocalBoxFuture<'a, Result<TaskChanges, RouteError>>;
}

/// An error answer: `{"error": message}` with `status`.
fn error(status: u16, message: impl Into<String>) -> HttpResponse {
    HttpResponse::json(status, &json!({ "error": message.into() }))
}
