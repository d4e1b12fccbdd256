//! How the Worker reaches its Durable Objects. [`ObjectTasks`] is the Worker's task service:
//! it sends each task operation to the task's own TaskRunner object, named by the task id, and
//! reads listings from the TaskIndex object of their scope. Under it, `ObjectClient` sends one
//! call of the internal protocol to a named object and reads its reply, retrying what the
//! platform says is safe to retry.

use std::cell::RefCell;
#[cfg(task_listing)]
use std::cell::{Cell, OnceCell};
use std::future::Future;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use worker::js_sys::Promise;
use worker::wasm_bindgen::{self, JsCast, JsValue, prelude::wasm_bindgen};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Delay, Env, ObjectNamespace, Request, Response, Stub, js_sys, web_sys};

use super::driven::settled;
use super::entry::Bindings;
#[cfg(task_listing)]
use super::listing;
#[cfg(feature = "inspector")]
use super::listing::EVERY_TASK_SCOPE;
use super::object_rpc::CallTarget;
#[cfg(feature = "inspector")]
use super::ports::JsClock;
use super::protocol::{
    CallerCall, ChildEndedCall, CreateCall, ObjectCall, ObjectReply, UpdateCall,
};
#[cfg(feature = "inspector")]
use super::protocol::{Candidate, InspectCall, OperateCall, WakeCall};
#[cfg(feature = "inspector")]
use super::settings::WorkerSettings;
use super::watch;
#[cfg(feature = "inspector")]
use crate::core::Timestamp;
#[cfg(feature = "inspector")]
use crate::core::control::Operation;
use crate::core::{ChildOutcome, ListPage, ListPosition, TaskSnapshot};
#[cfg(feature = "inspector")]
use crate::inspector::{InspectedTasks, TaskFilter};
#[cfg(feature = "inspector")]
use crate::runtime::Clock;
use crate::runtime::{CreateTask, LocalBoxFuture, RouteError, TaskChanges, TaskRoute, new_task_id};

/// How many times an internal call is sent when the platform says the failure is retryable.
const CALL_ATTEMPTS: u32 = 3;

/// The most tasks one `subscriptions/listen` stream may watch at once on this host. Each
/// watched task holds a WebSocket to its object open for as long as the stream lasts, and the
/// platform lets one request hold at most six outgoing connections at a time (a seventh waits
/// for one to close): five leaves one for the request's other calls to its objects.
#[allow(dead_code, reason = "read by the listen layer")]
pub(crate) const MAX_WATCHED_TASKS_PER_STREAM: usize = 5;

thread_local! {
    /// The bindings this isolate has found to be Durable Object namespaces.
    static NAMESPACES: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// The Durable Object namespace bound as `binding`. worker's `Env::durable_object` checks the
/// binding's class by name on every call, three JavaScript calls a request; a binding does not
/// change class within an isolate, so this checks each once.
pub(crate) fn bound_namespace(env: &Env, binding: &'static str) -> worker::Result<ObjectNamespace> {
    if NAMESPACES.with(|checked| checked.borrow().contains(&binding)) {
        let value = js_sys::Reflect::get(env, &JsValue::from_str(binding))?;
        if !value.is_undefined() {
            return Ok(value.unchecked_into());
        }
    }
    let namespace = env.durable_object(binding)?;
    NAMESPACES.with(|checked| checked.borrow_mut().push(binding));
    Ok(namespace)
}

/// The objects of one Durable Object namespace, reached by name.
pub(crate) struct ObjectClient {
    namespace: ObjectNamespace,
    /// What the objects are, for error messages ("the task's Durable Object").
    what: &'static str,
}

impl ObjectClient {
    /// A client of `namespace`, whose objects error messages call `what`.
    pub(crate) fn new(namespace: ObjectNamespace, what: &'static str) -> Self {
        ObjectClient { namespace, what }
    }

    /// Sends `call` to the object named `name`: a fresh stub per attempt, and another attempt
    /// only when the platform marks the failure retryable (every internal call is idempotent).
    pub(crate) async fn call<C: Serialize, R: DeserializeOwned>(
        &self,
        name: &str,
        call: &C,
    ) -> Result<R, RouteError> {
        let body = serde_json::to_string(call).map_err(|e| internal("encoding a call", &e))?;
        let body = body.as_str();
        self.with_retries(name, |stub| send(stub, body)).await
    }

    /// Sends the request `request` makes to the object named `name`, as
    /// [`call`](Self::call) sends a call (a fresh request per attempt: a request is used up
    /// by its sending). Only for requests that change nothing, which may be sent again.
    pub(crate) async fn fetch(
        &self,
        name: &str,
        request: impl Fn() -> worker::Result<Request>,
    ) -> Result<Response, RouteError> {
        let request = &request;
        self.with_retries(name, |stub| async move {
            let request = request().map_err(CallError::Worker)?;
            let target: FetchTarget = stub.into_rpc();
            let promise = target.fetch(request.inner()).map_err(CallError::Js)?;
            // Not through `settled`, which would hold back the request's other wake-ups (a
            // listen stream's timers) until the object answers.
            let response = JsFuture::from(promise).await.map_err(CallError::Js)?;
            let response: web_sys::Response = response.dyn_into().map_err(CallError::Js)?;
            Ok(Response::from(response))
        })
        .await
    }

    /// Runs `attempt` on a fresh stub of the object named `name`, again while the platform
    /// says its failure is retryable, up to [`CALL_ATTEMPTS`] times.
    async fn with_retries<T, F: Future<Output = Result<T, CallError>>>(
        &self,
        name: &str,
        attempt: impl Fn(Stub) -> F,
    ) -> Result<T, RouteError> {
        let mut pause = Duration::from_millis(20);
        let mut attempts = 1;
        loop {
            let outcome = match self.namespace.get_by_name(name) {
                Ok(stub) => attempt(stub).await,
                Err(error) => Err(CallError::Worker(error)),
            };
            match outcome {
                Ok(reply) => return Ok(reply),
                Err(error) if attempts < CALL_ATTEMPTS && error.is_retryable() => {
                    Delay::from(pause).await;
                    pause *= 4;
                    attempts += 1;
                }
                Err(error) => {
                    return Err(internal(&format!("reaching {}", self.what), &error));
                }
            }
        }
    }
}

/// One attempt at a call: a Durable Object RPC call on `stub`.
async fn send<R: DeserializeOwned>(stub: Stub, call: &str) -> Result<R, CallError> {
    let target: CallTarget = stub.into_rpc();
    let promise = target.durable_mcp_call(call).map_err(CallError::Js)?;
    let reply = settled(promise).await.map_err(CallError::Js)?;
    let reply = reply
        .as_string()
        .ok_or_else(|| CallError::Reply(format!("a reply that is not text: {reply:?}")))?;
    serde_json::from_str(&reply).map_err(|error| CallError::Reply(error.to_string()))
}

#[wasm_bindgen]
extern "C" {
    /// A stub of a Durable Object, as a `fetch` reaches it.
    type FetchTarget;

    /// Sends `request` to the object; resolves to its response.
    #[wasm_bindgen(method, catch)]
    fn fetch(this: &FetchTarget, request: &web_sys::Request) -> Result<Promise, JsValue>;
}

/// Why one attempt at an internal call failed.
enum CallError {
    /// The binding refused to make a stub.
    Worker(worker::Error),
    /// The call was rejected: the platform's error, or the object's.
    Js(JsValue),
    /// The reply was not the JSON of the expected type.
    Reply(String),
}

impl CallError {
    /// Whether the platform marked the failure as safe to retry: its JavaScript error has
    /// `retryable` set and not `overloaded` (more load would not help).
    fn is_retryable(&self) -> bool {
        let CallError::Js(error) = self else {
            return false;
        };
        let flag = |name: &str| {
            js_sys::Reflect::get(error, &JsValue::from_str(name))
                .ok()
                .and_then(|value| value.as_bool())
                .unwrap_or(false)
        };
        flag("retryable") && !flag("overloaded")
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Worker(error) => error.fmt(f),
            CallError::Js(error) => match error.dyn_ref::<js_sys::Error>() {
                Some(error) => f.write_str(&String::from(error.message())),
                None => write!(f, "{error:?}"),
            },
            CallError::Reply(error) => write!(f, "unreadable reply: {error}"),
        }
    }
}

/// A failure of the host: `what` failed because of `error`.
pub(crate) fn internal(what: &str, error: &dyn std::fmt::Display) -> RouteError {
    RouteError::Failed(format!("{what}: {error}"))
}

/// The task route of the Worker: every task operation goes to the task's own TaskRunner
/// object, named by the task id, and listings to the TaskIndex object of their scope. This is
/// what [`serve`](super::serve) hands the router; a Worker with routes of its own can use it
/// directly.
pub struct ObjectTasks {
    runners: ObjectClient,
    #[cfg(task_listing)]
    env: Env,
    /// The index client, looked up on first use (creations and listings, not polls); `None`
    /// inside when the Worker has no binding named `bindings.index`.
    #[cfg(task_listing)]
    index: OnceCell<Option<ObjectClient>>,
    bindings: Bindings,
}

impl std::fmt::Debug for ObjectTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectTasks")
            .field("bindings", &self.bindings)
            .finish_non_exhaustive()
    }
}

#[cfg(task_listing)]
thread_local! {
    /// Whether this isolate has logged that tasks are created unlisted for want of an index.
    static WARNED_UNLISTED: Cell<bool> = const { Cell::new(false) };
}

impl ObjectTasks {
    /// The task route over the Worker's [`TASK_RUNNER_BINDING`](super::TASK_RUNNER_BINDING)
    /// and, if bound, [`TASK_INDEX_BINDING`](super::TASK_INDEX_BINDING). Fails only without a
    /// TaskRunner binding.
    pub fn from_env(env: &Env) -> worker::Result<Self> {
        Self::from_bindings(env, Bindings::DEFAULT)
    }

    /// The task route over the TaskRunner namespace bound as `bindings.runner()` and, if
    /// bound, the TaskIndex namespace `bindings.index()`. Fails only without the runner
    /// binding.
    pub fn from_bindings(env: &Env, bindings: Bindings) -> worker::Result<Self> {
        let runners = bound_namespace(env, bindings.runner())?;
        Ok(ObjectTasks {
            runners: ObjectClient::new(runners, "the task's Durable Object"),
            #[cfg(task_listing)]
            env: env.clone(),
            #[cfg(task_listing)]
            index: OnceCell::new(),
            bindings,
        })
    }

    /// The index's client, or `None` without its binding.
    #[cfg(task_listing)]
    fn bound_index(&self) -> Option<&ObjectClient> {
        self.index
            .get_or_init(|| {
                let index = bound_namespace(&self.env, self.bindings.index()).ok()?;
                Some(ObjectClient::new(index, "the task index"))
            })
            .as_ref()
    }

    /// The index, or the error that says how to add it.
    #[cfg(task_listing)]
    fn index(&self) -> Result<&ObjectClient, RouteError> {
        self.bound_index().ok_or_else(|| {
            let binding = self.bindings.index();
            RouteError::Failed(format!(
                "tasks/list needs the Durable Object binding {binding}, which this \
                 Worker lacks: add to wrangler.toml a [[durable_objects.bindings]] with name = \
                 \"{binding}\" and class_name = \"TaskIndex\", and a [[migrations]] \
                 entry with new_sqlite_classes = [\"TaskIndex\"] (see docs/deploying.md)"
            ))
        })
    }

    /// Records a new task in its scope's index before it is created: a crash in between
    /// leaves at most an id whose task does not exist, which listing skips and forgets.
    #[cfg(task_listing)]
    async fn register(&self, scope: &str, task_id: &str) -> Result<(), RouteError> {
        let Some(index) = self.bound_index() else {
            if !WARNED_UNLISTED.replace(true) {
                tracing::error!(
                    target: crate::core::trace::TARGET,
                    "tasks are created without being listed: this Worker has no \
                     {} binding (see docs/deploying.md)",
                    self.bindings.index()
                );
            }
            return Ok(());
        };
        listing::register(index, scope, task_id).await
    }

    /// Runs the alarm handler of the task's object at once, as if its alarm had fired: what
    /// an operator's wake request asks for.
    #[cfg(feature = "inspector")]
    pub(super) async fn wake(&self, task_id: &str) -> Result<(), RouteError> {
        let call = ObjectCall::Wake(WakeCall {
            task_id: task_id.to_owned(),
        });
        self.runners
            .call::<_, ObjectReply>(task_id, &call)
            .await
            .and_then(ObjectReply::into_done)
    }
}

/// Whether the Worker serves the inspector: it has the inspector's token.
#[cfg(feature = "inspector")]
pub(crate) fn inspector_enabled(env: &Env) -> bool {
    WorkerSettings::of_isolate(env).is_ok_and(|settings| settings.inspector_token.is_some())
}

#[cfg(feature = "inspector")]
impl InspectedTasks for ObjectTasks {
    fn now(&self) -> Timestamp {
        JsClock.now()
    }

    fn tasks<'a>(
        &'a self,
        filter: &'a TaskFilter,
        after: Option<&'a ListPosition>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<ListPage<Value>, RouteError>> {
        Box::pin(async move {
            let index = self.index()?;
            let candidate = |entry| listing::inspected(&self.runners, filter, entry);
            listing::page_of(index, EVERY_TASK_SCOPE, after.cloned(), limit, candidate).await
        })
    }

    fn task<'a>(
        &'a self,
        task_id: &'a str,
    ) -> LocalBoxFuture<'a, Result<Option<Value>, RouteError>> {
        Box::pin(async move {
            let call = ObjectCall::Inspect(InspectCall {
                task_id: task_id.to_owned(),
                whole: true,
                filter: None,
            });
            let reply = self.runners.call::<_, ObjectReply>(task_id, &call).await?;
            Ok(match reply.into_view()? {
                Candidate::Shown(task) => Some(task),
                Candidate::Skipped | Candidate::Gone => None,
            })
        })
    }

    fn operate<'a>(
        &'a self,
        task_id: &'a str,
        operation: Operation,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        Box::pin(async move {
            let call = ObjectCall::Operate(OperateCall {
                task_id: task_id.to_owned(),
                operation,
            });
            self.runners
                .call::<_, ObjectReply>(task_id, &call)
                .await
                .and_then(ObjectReply::into_done)
        })
    }

    fn watch<'a>(
        &'a self,
        task_id: &'a str,
    ) -> LocalBoxFuture<'a, Result<TaskChanges, RouteError>> {
        Box::pin(watch::open(&self.runners, task_id, None, true))
    }
}

impl TaskRoute for ObjectTasks {
    fn create(&self, request: CreateTask) -> LocalBoxFuture<'_, Result<TaskSnapshot, RouteError>> {
        Box::pin(async move {
            let task_id = match request.task_id {
                Some(id) => id,
                None => new_task_id()?,
            };
            // Nothing reads an index without the 2025 lane's `tasks/list` or the inspector.
            #[cfg(feature = "mcp-2025")]
            if let Some(scope) = &request.list_scope {
                self.register(scope, &task_id).await?;
            }
            #[cfg(feature = "inspector")]
            if inspector_enabled(&self.env) {
                self.register(EVERY_TASK_SCOPE, &task_id).await?;
            }
            let call = ObjectCall::Create(CreateCall {
                task_id: task_id.clone(),
                tool_name: request.tool_name,
                input: request.input,
                principal: request.principal,
                list_scope: request.list_scope,
                parent: request.parent,
            });
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
    ) -> LocalBoxFuture<'a, Result<TaskSnapshot, RouteError>> {
        Box::pin(async move {
            let call = ObjectCall::Get(CallerCall {
                task_id: task_id.to_owned(),
                caller: caller.map(str::to_owned),
            });
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
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        Box::pin(async move {
            let call = ObjectCall::Update(UpdateCall {
                task_id: task_id.to_owned(),
                responses: responses.clone(),
                caller: caller.map(str::to_owned),
            });
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
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        Box::pin(async move {
            let call = ObjectCall::Cancel(CallerCall {
                task_id: task_id.to_owned(),
                caller: caller.map(str::to_owned),
            });
            self.runners
                .call::<_, ObjectReply>(task_id, &call)
                .await?
                .into_done()
        })
    }

    fn list<'a>(
        &'a self,
        scope: &'a str,
        after: Option<&'a ListPosition>,
        limit: usize,
    ) -> LocalBoxFuture<'a, Result<ListPage<TaskSnapshot>, RouteError>> {
        Box::pin(async move {
            #[cfg(task_listing)]
            return listing::page(self.index()?, &self.runners, scope, after.cloned(), limit).await;
            #[cfg(not(task_listing))]
            return Err(RouteError::Failed(format!(
                "cannot list the tasks of {scope} after {after:?} ({limit} at most): this \
                 Worker keeps no task index (durable-mcp built without its mcp-2025 and \
                 inspector features)"
            )));
        })
    }

    fn child_ended<'a>(
        &'a self,
        parent_id: &'a str,
        key: &'a str,
        outcome: &'a ChildOutcome,
    ) -> LocalBoxFuture<'a, Result<(), RouteError>> {
        Box::pin(async move {
            let call = ObjectCall::ChildEnded(ChildEndedCall {
                task_id: parent_id.to_owned(),
                key: key.to_owned(),
                outcome: outcome.clone(),
            });
            self.runners
                .call::<_, ObjectReply>(parent_id, &call)
                .await?
                .into_done()
        })
    }

    fn pause(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        Box::pin(Delay::from(duration))
    }

    fn watch<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<TaskChanges, RouteError>> {
        Box::pin(watch::open(&self.runners, task_id, caller, false))
    }
}
