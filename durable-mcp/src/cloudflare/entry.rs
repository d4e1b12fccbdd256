//! The Worker's fetch handler: the router, with each task reached in its own Durable Object.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use serde_json::Value;
use worker::{Delay, Env, Method, Request, Response};

use super::client::ObjectClient;
use super::listing;
use super::protocol::{ObjectCall, ObjectReply};
use crate::core::TaskSnapshot;
use crate::rpc::{
    CORS_ORIGINS_VAR, Headers, HttpRequest, HttpResponse, McpServer, Router, RpcError, TaskPage,
    TaskService, decode_cursor, same_secret,
};
use crate::runtime::{CreateTask, LocalBoxFuture, new_task_id};

/// The binding name of the TaskRunner Durable Object namespace in wrangler.toml.
pub const TASK_RUNNER_BINDING: &str = "TASK_RUNNER";

/// The binding name of the TaskIndex Durable Object namespace in wrangler.toml: one object per
/// listing scope, which `tasks/list` reads. Without it, listing fails with an error naming the
/// binding, and tasks are created as before but not listed.
pub const TASK_INDEX_BINDING: &str = "TASK_INDEX";

/// The path of the MCP endpoint; every other path answers 404.
pub const MCP_PATH: &str = "/mcp";

/// Where an operator wakes a task: `POST /__durable-mcp/wake/<task id>` with
/// `Authorization: Bearer <DURABLE_MCP_ADMIN_TOKEN>` runs the task's alarm handler at once,
/// as if its alarm had fired. Without that Worker secret the path does not exist (404).
pub const WAKE_PATH: &str = "/__durable-mcp/wake/";

/// The Worker secret (or variable) that enables [`WAKE_PATH`].
pub const ADMIN_TOKEN_VAR: &str = "DURABLE_MCP_ADMIN_TOKEN";

/// The Worker variable listing the hosts the endpoint answers besides loopback: the Worker's
/// own hostnames once deployed (`report-task.example.workers.dev`, a custom domain). Requests
/// whose `Host` or `Origin` names another host get HTTP 403, as on the native host.
pub const ALLOWED_HOSTS_VAR: &str = "DURABLE_MCP_ALLOWED_HOSTS";

/// The largest request body the endpoint reads (the native host's limit too).
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

thread_local! {
    /// The server, built once per isolate from the factory of the first request.
    static SERVER: RefCell<Option<Rc<McpServer>>> = const { RefCell::new(None) };
}

/// Answers one request to the Worker: the MCP endpoint at [`MCP_PATH`], with tasks in the
/// Durable Objects bound as [`TASK_RUNNER_BINDING`]. `server` builds the server once per
/// isolate; plain tools, resources and discovery are answered here without touching an object.
///
/// ```ignore
/// #[event(fetch)]
/// async fn fetch(request: Request, env: Env, _cx: Context) -> Result<Response> {
///     durable_mcp::cloudflare::serve(request, &env, server).await
/// }
/// ```
pub async fn serve(
    mut request: Request,
    env: &Env,
    server: impl FnOnce() -> McpServer,
) -> worker::Result<Response> {
    let path = request.path();
    if let Some(task_id) = path.strip_prefix(WAKE_PATH) {
        return wake(&request, env, task_id).await;
    }
    if path != MCP_PATH {
        return Response::error("not found: the MCP endpoint is /mcp", 404);
    }
    let Some(body) = read_body(&mut request, BODY_LIMIT).await? else {
        return into_response(HttpResponse::too_large(BODY_LIMIT));
    };
    let headers = Headers::new(request.headers().entries());
    let http = HttpRequest {
        method: request.method().to_string(),
        headers,
        body,
    };
    let tasks = Rc::new(ObjectTasks::from_env(env)?);
    let router = Router::with_tasks(shared_server(server, env), tasks);
    into_response(router.handle(http).await)
}

/// The request's body, or `None` when it is longer than `limit`: refused on its
/// `Content-Length` before a byte is read, and otherwise read only up to the limit, so that
/// a huge body never fills the isolate's memory.
async fn read_body(request: &mut Request, limit: usize) -> worker::Result<Option<Vec<u8>>> {
    let declared = request.headers().get("content-length")?;
    if declared
        .and_then(|length| length.trim().parse::<u64>().ok())
        .is_some_and(|length| length > limit as u64)
    {
        return Ok(None);
    }
    let Ok(mut chunks) = request.stream() else {
        // No body at all.
        return Ok(Some(Vec::new()));
    };
    let mut body = Vec::new();
    while let Some(chunk) = futures_util::StreamExt::next(&mut chunks).await {
        let chunk = chunk?;
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// Runs the alarm handler of `task_id`'s object, for an operator holding the admin token.
async fn wake(request: &Request, env: &Env, task_id: &str) -> worker::Result<Response> {
    // A Worker sees secrets and plain variables alike; docs/deploying.md says to set it as a
    // secret, which keeps it out of wrangler.toml and the dashboard.
    let Ok(token) = env.secret(ADMIN_TOKEN_VAR) else {
        return Response::error("not found: the MCP endpoint is /mcp", 404);
    };
    let presented = request.headers().get("authorization")?.unwrap_or_default();
    let expected = format!("Bearer {token}");
    if !same_secret(&presented, &expected) {
        let mut refused = Response::error(
            format!("wake needs Authorization: Bearer <{ADMIN_TOKEN_VAR}>"),
            401,
        )?;
        refused
            .headers_mut()
            .set("www-authenticate", "Bearer realm=\"durable-mcp wake\"")?;
        return Ok(refused);
    }
    if request.method() != Method::Post {
        return Response::error("wake is a POST", 405);
    }
    let tasks = ObjectTasks::from_env(env)?;
    let call = ObjectCall::Wake {
        task_id: task_id.to_owned(),
    };
    match tasks
        .runners
        .call::<_, ObjectReply>(task_id, &call)
        .await
        .and_then(ObjectReply::into_done)
    {
        Ok(()) => Response::ok(format!("woke {task_id}")),
        Err(error) => Response::error(error.error.message, 500),
    }
}

fn shared_server(server: impl FnOnce() -> McpServer, env: &Env) -> Rc<McpServer> {
    SERVER.with(|cell| {
        let mut cell = cell.borrow_mut();
        let built = cell.get_or_insert_with(|| Rc::new(allow_hosts_from(env, server())));
        Rc::clone(built)
    })
}

/// Adds the hosts named in the Worker variable [`ALLOWED_HOSTS_VAR`] (separated by commas or
/// spaces; `*` allows any) to the server's Host and Origin policy, and the origins named in
/// [`CORS_ORIGINS_VAR`] to those web pages may call from.
fn allow_hosts_from(env: &Env, mut server: McpServer) -> McpServer {
    if let Ok(origins) = env.var(CORS_ORIGINS_VAR) {
        server = server.allow_origins(&origins.to_string());
    }
    let Ok(hosts) = env.var(ALLOWED_HOSTS_VAR) else {
        return server;
    };
    let hosts = hosts.to_string();
    for host in hosts.split([',', ' ']).filter(|host| !host.is_empty()) {
        server = if host == "*" {
            server.allow_any_host()
        } else {
            server.allow_host(host)
        };
    }
    server
}

fn into_response(response: HttpResponse) -> worker::Result<Response> {
    let reply = match response.events {
        // The stream is cancelled, and its work dropped, when the client goes away.
        Some(events) => {
            Response::from_stream(futures_util::StreamExt::map(events, Ok::<_, worker::Error>))?
        }
        None => Response::from_bytes(response.body)?,
    };
    let mut reply = reply.with_status(response.status);
    let headers = reply.headers_mut();
    for (name, value) in response.headers {
        headers.set(name, &value)?;
    }
    Ok(reply)
}

/// The task service of the Worker: every task operation goes to the task's own TaskRunner
/// object, named by the task id, and listings to the TaskIndex object of their scope. This is
/// what [`serve`] hands the router; a Worker with routes of its own can use it directly.
pub struct ObjectTasks {
    runners: ObjectClient,
    /// `None` when the Worker has no [`TASK_INDEX_BINDING`].
    index: Option<ObjectClient>,
}

impl std::fmt::Debug for ObjectTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectTasks")
            .field("lists", &self.index.is_some())
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// Whether this isolate has logged that tasks are created unlisted for want of an index.
    static WARNED_UNLISTED: Cell<bool> = const { Cell::new(false) };
}

impl ObjectTasks {
    /// The task service over the Worker's [`TASK_RUNNER_BINDING`] and, if bound,
    /// [`TASK_INDEX_BINDING`]. Fails only without a TaskRunner binding.
    pub fn from_env(env: &Env) -> worker::Result<Self> {
        let runners = env.durable_object(TASK_RUNNER_BINDING)?;
        let index = env.durable_object(TASK_INDEX_BINDING).ok();
        Ok(ObjectTasks {
            runners: ObjectClient::new(runners, "the task's Durable Object"),
            index: index.map(|index| ObjectClient::new(index, "the task index")),
        })
    }

    /// The index, or the error that says how to add it.
    fn index(&self) -> Result<&ObjectClient, RpcError> {
        self.index.as_ref().ok_or_else(|| {
            RpcError::internal(format!(
                "tasks/list needs the Durable Object binding {TASK_INDEX_BINDING}, which this \
                 Worker lacks: add to wrangler.toml a [[durable_objects.bindings]] with name = \
                 \"{TASK_INDEX_BINDING}\" and class_name = \"TaskIndex\", and a [[migrations]] \
                 entry with new_sqlite_classes = [\"TaskIndex\"] (see docs/deploying.md)"
            ))
        })
    }

    /// Records a new task in its scope's index before it is created: a crash in between
    /// leaves at most an id whose task does not exist, which listing skips and forgets.
    async fn register(&self, scope: &str, task_id: &str) -> Result<(), RpcError> {
        let Some(index) = &self.index else {
            if !WARNED_UNLISTED.replace(true) {
                worker::console_error!(
                    "durable-mcp: tasks are created without being listed: this Worker has no \
                     {TASK_INDEX_BINDING} binding (see docs/deploying.md)"
                );
            }
            return Ok(());
        };
        listing::register(index, scope, task_id).await
    }
}

impl TaskService for ObjectTasks {
    fn create(&self, request: CreateTask) -> LocalBoxFuture<'_, Result<TaskSnapshot, RpcError>> {
        Box::pin(async move {
            let task_id = match request.task_id {
                Some(id) => id,
                None => new_task_id().map_err(RpcError::from_engine)?,
            };
            if let Some(scope) = &request.list_scope {
                self.register(scope, &task_id).await?;
            }
            let call = ObjectCall::Create {
                task_id: task_id.clone(),
                tool_name: request.tool_name,
                input: request.input,
                principal: request.principal,
                list_scope: request.list_scope,
            };
            self.runners
                .call::<_, ObjectReply>(&task_id, &call)
                .await?
                .into_snapshot()
        })
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskSnapshot, RpcError>> {
        Box::pin(async move {
            let call = ObjectCall::Get {
                task_id: task_id.to_owned(),
                caller: caller.map(str::to_owned),
            };
            self.runners
                .call::<_, ObjectReply>(task_id, &call)
                .await?
                .into_snapshot()
        })
    }

    fn update<'a>(
        &'a self,
        task_id: &'a str,
        responses: &'a Value,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RpcError>> {
        Box::pin(async move {
            let call = ObjectCall::Update {
                task_id: task_id.to_owned(),
                responses: responses.clone(),
                caller: caller.map(str::to_owned),
            };
            self.runners
                .call::<_, ObjectReply>(task_id, &call)
                .await?
                .into_done()
        })
    }

    fn cancel<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<(), RpcError>> {
        Box::pin(async move {
            let call = ObjectCall::Cancel {
                task_id: task_id.to_owned(),
                caller: caller.map(str::to_owned),
            };
            self.runners
                .call::<_, ObjectReply>(task_id, &call)
                .await?
                .into_done()
        })
    }

    fn list<'a>(
        &'a self,
        scope: &'a str,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<TaskPage, RpcError>> {
        Box::pin(async move {
            let index = self.index()?;
            let after = cursor.map(decode_cursor).transpose()?;
            let page = listing::page(index, &self.runners, scope, after, limit).await?;
            Ok(TaskPage::from(page))
        })
    }

    fn pause(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        Box::pin(Delay::from(duration))
    }
}
