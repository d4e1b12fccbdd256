//! The inspector's requests: the token check, the routes, and the answers.

use serde_json::{Value, json};

use super::query::listing;
use super::{InspectedTasks, error};
use crate::core::control::Operation;
use futures_util::StreamExt;

use crate::rpc::cursor::encode_cursor;
use crate::rpc::headers::same_secret;
use crate::rpc::listen::LastSent;
use crate::rpc::sse::{self, EventStream};
use crate::rpc::{Headers, HttpResponse};
use crate::runtime::RouteError;

/// The longest task id the inspector takes (ids are 32 hex digits).
const MAX_TASK_ID: usize = 256;

/// One request to the inspector, its path taken relative to the inspector's own.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub method: &'a str,
    /// `""` or `/` for the page, `/api/...` for the API.
    pub path: &'a str,
    /// The query string, without its `?`.
    pub query: &'a str,
    pub headers: &'a Headers,
    pub body: &'a [u8],
}

/// Answers `request` for the tasks of `tasks`, if it presents `token`.
pub(crate) async fn handle(
    tasks: &dyn InspectedTasks,
    token: &str,
    request: Request<'_>,
) -> HttpResponse {
    let Some(route) = request.path.strip_prefix("/api/") else {
        return match (request.path, request.method) {
            ("" | "/", "GET") => super::page::page(),
            ("" | "/", _) => error(405, "the inspector's page is a GET"),
            _ => error(
                404,
                "no such inspector page; the page is at the inspector's path",
            ),
        };
    };
    let presented = request.headers.get("authorization").unwrap_or_default();
    if !same_secret(&presented, &format!("Bearer {token}")) {
        let mut refused = error(
            401,
            "the inspector needs Authorization: Bearer <the host's inspector token>",
        );
        refused.headers.push((
            "www-authenticate",
            "Bearer realm=\"durable-mcp inspector\"".to_owned(),
        ));
        return refused;
    }
    let segments: Vec<&str> = route.split('/').collect();
    match (request.method, segments.as_slice()) {
        ("GET", ["tasks"]) => list(tasks, request.query).await,
        ("GET", ["tasks", task_id]) => show(tasks, task_id).await,
        ("POST", ["tasks", task_id, action]) => act(tasks, task_id, action, request.body).await,
        ("GET", ["tasks", task_id, "events"]) => events(tasks, task_id).await,
        (_, ["tasks"] | ["tasks", _]) => error(405, "use GET to read tasks"),
        (_, ["tasks", _, _]) => error(405, "an action on a task is a POST"),
        _ => error(404, format!("no such inspector API route: /api/{route}")),
    }
}

async fn list(tasks: &dyn InspectedTasks, query: &str) -> HttpResponse {
    let listing = match listing(query, tasks.now()) {
        Ok(listing) => listing,
        Err(message) => return error(400, message),
    };
    let page = tasks
        .tasks(&listing.filter, listing.after.as_ref(), listing.limit)
        .await;
    match page {
        Ok(page) => HttpResponse::json(
            200,
            &json!({
                "tasks": page.items,
                "nextCursor": page.next.as_ref().map(encode_cursor),
            }),
        ),
        Err(failure) => refused(&failure),
    }
}

async fn show(tasks: &dyn InspectedTasks, task_id: &str) -> HttpResponse {
    if let Err(message) = check_task_id(task_id) {
        return error(400, message);
    }
    match tasks.task(task_id).await {
        Ok(Some(task)) => HttpResponse::json(200, &task),
        Ok(None) => not_found(task_id),
        Err(failure) => refused(&failure),
    }
}

/// The task's changes as they commit, as server-sent events: the task as `tasks/get` shows
/// it, once now and once per change a client could see (the page reads the whole detail
/// again on each). It ends once the task has ended, or when the way to it broke (the page then
/// polls); a host that cannot follow tasks answers an error, and the page polls.
async fn events(tasks: &dyn InspectedTasks, task_id: &str) -> HttpResponse {
    if let Err(message) = check_task_id(task_id) {
        return error(400, message);
    }
    let changes = match tasks.watch(task_id).await {
        Ok(changes) => changes,
        Err(RouteError::NotFound(_)) => return not_found(task_id),
        Err(failure) => return refused(&failure),
    };
    let mut last = LastSent::default();
    // A task that has ended changes no more: the stream ends right after telling it.
    let until_ended =
        futures_util::stream::unfold((changes, false), |(mut changes, ended)| async move {
            if ended {
                return None;
            }
            let snapshot = changes.next().await?;
            let ended = snapshot.status.is_terminal();
            Some((snapshot, (changes, ended)))
        });
    let events = until_ended.enumerate().filter_map(move |(n, snapshot)| {
        let event = last
            .news(&snapshot)
            .map(|task| sse::message(&n.to_string(), &task));
        std::future::ready(event)
    });
    HttpResponse::events(EventStream::new(events))
}

async fn act(tasks: &dyn InspectedTasks, task_id: &str, action: &str, body: &[u8]) -> HttpResponse {
    if let Err(message) = check_task_id(task_id) {
        return error(400, message);
    }
    let operation = match operation(action, body) {
        Ok(operation) => operation,
        Err((status, message)) => return error(status, message),
    };
    match tasks.task(task_id).await {
        Ok(Some(_)) => {}
        Ok(None) => return not_found(task_id),
        Err(failure) => return refused(&failure),
    }
    if let Err(failure) = tasks.operate(task_id, operation).await {
        return refused(&failure);
    }
    // The task as it is now (`null` if it was purged meanwhile).
    match tasks.task(task_id).await {
        Ok(task) => HttpResponse::json(200, &json!({ "task": task })),
        Err(failure) => refused(&failure),
    }
}

/// The operation an action names, with its body checked: `cancel` and `wake` take none,
/// `answer` takes `{"inputResponses": {"<key>": <response>, ...}}`.
fn operation(action: &str, body: &[u8]) -> Result<Operation, (u16, String)> {
    let no_body = |operation| {
        if body.iter().all(u8::is_ascii_whitespace) {
            Ok(operation)
        } else {
            Err((400, format!("{action} takes no body")))
        }
    };
    match action {
        "cancel" => no_body(Operation::Cancel),
        "wake" => no_body(Operation::Wake),
        "answer" => {
            let shape = "answer takes a JSON object {\"inputResponses\": {\"<key>\": <response>}}";
            let body: Value = serde_json::from_slice(body)
                .map_err(|error| (400, format!("{shape}: the body is not JSON ({error})")))?;
            match body.as_object() {
                Some(fields) if fields.len() == 1 && fields.contains_key("inputResponses") => {
                    Ok(Operation::Answer(fields["inputResponses"].clone()))
                }
                _ => Err((400, format!("{shape}; got {body}"))),
            }
        }
        _ => Err((
            404,
            format!("no action {action:?} on a task; use cancel, wake or answer"),
        )),
    }
}

fn check_task_id(task_id: &str) -> Result<(), String> {
    let printable = task_id.bytes().all(|byte| byte.is_ascii_graphic());
    if task_id.is_empty() || task_id.len() > MAX_TASK_ID || !printable {
        return Err(format!(
            "{task_id:?} is not a task id: one to {MAX_TASK_ID} printable ASCII characters"
        ));
    }
    Ok(())
}

fn not_found(task_id: &str) -> HttpResponse {
    error(
        404,
        format!("no task {task_id:?}: it never existed, or it was purged"),
    )
}

/// The answer for an error of the host: a refused parameter is the client's (400).
fn refused(failure: &RouteError) -> HttpResponse {
    let status = match failure {
        RouteError::NotFound(_) | RouteError::Refused(_) => 400,
        RouteError::Busy { .. } => 503,
        _ => 500,
    };
    error(status, failure.to_string())
}
