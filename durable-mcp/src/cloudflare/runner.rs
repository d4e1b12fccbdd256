//! The TaskRunner: the logic of the Durable Object that holds one task. Its storage keeps the
//! task's rows, its alarm fires the task's next wake-up, and the task body runs inside it, so
//! every journal read and write is a local SQLite call.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::time::Duration;

use worker::wasm_bindgen::JsValue;
use worker::{Env, Request, Response, State, web_sys};

use super::client::ObjectTasks;
#[cfg(feature = "inspector")]
use super::client::inspector_enabled;
#[cfg(task_listing)]
use super::client::{ObjectClient, bound_namespace};
use super::entry::Bindings;
#[cfg(task_listing)]
use super::listing;
#[cfg(feature = "inspector")]
use super::listing::EVERY_TASK_SCOPE;
use super::object_rpc::{answer_now_or_later, check_rpc_target};
use super::ports::{AlarmScheduler, JsClock, JsTimer};
#[cfg(task_listing)]
use super::protocol::ListedCall;
use super::protocol::{
    CallerCall, ChildEndedCall, CreateCall, ObjectCall, ObjectReply, UpdateCall, answer_text,
    refuse_fetch,
};
#[cfg(feature = "inspector")]
use super::protocol::{InspectCall, OperateCall, WakeCall};
use super::settings::RunnerSettings;
use super::sql_store::DurableObjectStore;
use super::watch;
#[cfg(feature = "inspector")]
use crate::apart::apart;
use crate::core::EngineError;
#[cfg(feature = "inspector")]
use crate::inspector::{self, TaskFilter};
use crate::rpc::McpServer;
use crate::runtime::engine::TickEnd;
use crate::runtime::{Clock, CreateTask, Engine, Host, RouteError, Store, TaskRegistry, TaskRoute};

/// The body of a user's TaskRunner Durable Object. [`task_runner!`](super::task_runner)
/// declares the object: a `#[durable_object]` struct wrapping this, whose `alarm` calls
/// [`alarm`](Self::alarm), whose `fetch` calls [`fetch`](Self::fetch) (the Worker's watches of
/// the task), and whose Durable Object RPC method `durableMcpCall` calls [`call`](Self::call)
/// (the Worker's other calls).
pub struct TaskRunner {
    // A Worker built with `--panic-unwind` requires its objects to be unwind safe. A panic in a
    // task body is caught by the driver; one that unwinds out of a handler leaves only caches
    // behind (the rows are the truth, and the in-flight mark is dropped on the way out).
    // Shared with the calls in flight, which may outlive the RPC method that started them.
    inner: AssertUnwindSafe<Rc<Runner>>,
}

struct Runner {
    state: State,
    store: Rc<DurableObjectStore>,
    alarm: Rc<AlarmScheduler>,
    engine: Engine,
    settings: RunnerSettings,
    /// The listing indexes, told when a listed task is purged; `None` without the binding
    /// [`Bindings::index`] names.
    #[cfg(task_listing)]
    index: Option<ObjectClient>,
    /// Whether the Worker serves the inspector, whose index lists every task.
    #[cfg(feature = "inspector")]
    inspected: bool,
    /// The other tasks' objects (children to start and cancel, a parent to tell), which the
    /// engine reaches through this; `None` without a runner binding.
    #[allow(
        dead_code,
        reason = "held for the engine, which keeps only a weak reference"
    )]
    tasks: Option<Rc<dyn TaskRoute>>,
}

impl std::fmt::Debug for TaskRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRunner")
            .field("engine", &self.inner.engine)
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl TaskRunner {
    /// The runner of the object `state`, running the tasks `server` registers. Reads its
    /// [settings](super#settings) from `env`. Writes nothing. Its purged tasks leave the index
    /// bound as [`TASK_INDEX_BINDING`](super::TASK_INDEX_BINDING).
    ///
    /// The task registry is built once per isolate and kept under the type name of `server`:
    /// two classes whose factories have one type name (the same fn, or closures in one
    /// function) share the first one's tasks. [`for_class`](Self::for_class), which
    /// [`task_runner!`](super::task_runner) calls, keeps it under the class's name instead.
    pub fn new<F: FnOnce() -> McpServer>(state: State, env: &Env, server: F) -> Self {
        Self::for_class(
            state,
            env,
            std::any::type_name::<F>(),
            Bindings::DEFAULT,
            server,
        )
    }

    /// The runner of an object of the class `class` (its name, unique in the Worker), running
    /// the tasks `server` registers; the index its listed tasks are in is bound as
    /// `bindings.index()`. The task registry is built once per isolate for each class, so a
    /// Worker may declare several runner classes, each with its own server.
    pub fn for_class<F: FnOnce() -> McpServer>(
        state: State,
        env: &Env,
        class: &'static str,
        bindings: Bindings,
        server: F,
    ) -> Self {
        #[cfg(feature = "logging")]
        super::logging::install(env);
        let settings = RunnerSettings::from_env(env);
        let storage = state.storage();
        let store = Rc::new(DurableObjectStore::open(storage));
        let alarm = Rc::new(AlarmScheduler::new(state.storage()));
        let host = Host {
            store: store.clone(),
            clock: Rc::new(JsClock),
            timer: Rc::new(JsTimer),
            scheduler: alarm.clone(),
        };
        let engine = Engine::with_shared_registry(shared_registry(class, server), host)
            .lease(settings.lease)
            .hand_off(settings.hand_off)
            // A cancelled alarm handler may be left unpolled, never dropped, in a live isolate.
            .expire_activations_with_their_lease();
        check_rpc_target(class);
        let tasks = ObjectTasks::from_bindings(env, bindings)
            .ok()
            .map(|tasks| Rc::new(tasks) as Rc<dyn TaskRoute>);
        if let Some(tasks) = &tasks {
            engine.reach_tasks_through(Rc::downgrade(tasks));
        }
        #[cfg(task_listing)]
        let index = bound_namespace(env, bindings.index())
            .ok()
            .map(|index| ObjectClient::new(index, "the task index"));
        // Before any event reaches this instance: the watches that outlived the last one.
        watch::rewatch(&state, &engine);
        TaskRunner {
            inner: AssertUnwindSafe(Rc::new(Runner {
                state,
                store,
                alarm,
                engine,
                settings,
                #[cfg(task_listing)]
                index,
                #[cfg(feature = "inspector")]
                inspected: inspector_enabled(env),
                tasks,
            })),
        }
    }

    /// The engine running this object's task.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// Answers one internal call from the Worker (see [`super::serve`]), given as JSON text,
    /// with the reply's JSON text: the text itself when the answer needs no waiting (a poll),
    /// else a promise of it. Refuses (`Err`, a JavaScript error) a text that is no call.
    pub fn call(&self, call: String) -> Result<JsValue, JsValue> {
        let runner = Rc::clone(&self.inner);
        answer_now_or_later(async move {
            answer_text(&call, |call| async { Ok(runner.answer(call).await) }).await
        })
    }

    /// A `fetch` to the object: the Worker's watch of the task (a WebSocket on which the
    /// object pushes the task's changes, accepted with the hibernation API), else refused with
    /// 404, since the Worker reaches the object otherwise only through [`call`](Self::call).
    pub fn fetch(&self, request: Request) -> worker::Result<Response> {
        if watch::asks_to_watch(&request) {
            return watch::accept(&self.inner.state, &self.inner.engine, &request);
        }
        refuse_fetch(&request, "TaskRunner")
    }

    /// The Worker's end of a watch's socket closed or failed: closes the object's end. The
    /// object's `webSocketClose` and `webSocketError` call this (see
    /// [`task_runner!`](super::task_runner)).
    #[doc(hidden)]
    pub fn watch_ended(&self, socket: &web_sys::WebSocket) {
        watch::ended(socket);
    }

    /// The alarm: runs whatever is due for the task. Never fails: a failure is logged and the
    /// backstop alarm, set before anything else, tries again.
    pub async fn alarm(&self) -> worker::Result<Response> {
        self.inner.alarm().await
    }
}

impl Runner {
    async fn answer(&self, call: ObjectCall) -> ObjectReply {
        let outcome = match call {
            ObjectCall::Create(CreateCall {
                task_id,
                tool_name,
                input,
                principal,
                list_scope,
                parent,
            }) => {
                let mut request = CreateTask::new(tool_name, input);
                request.task_id = Some(task_id);
                request.principal = principal;
                request.list_scope = list_scope;
                request.parent = parent;
                self.engine.create_task(request).map(ObjectReply::Snapshot)
            }
            ObjectCall::Get(CallerCall { task_id, caller }) => self
                .engine
                .get(&task_id, caller.as_deref())
                .map(ObjectReply::Snapshot),
            ObjectCall::Update(UpdateCall {
                task_id,
                responses,
                caller,
            }) => self
                .engine
                .update(&task_id, &responses, caller.as_deref())
                .map(|()| ObjectReply::Done),
            ObjectCall::Cancel(CallerCall { task_id, caller }) => self
                .engine
                .cancel(&task_id, caller.as_deref())
                .map(|()| ObjectReply::Done),
            ObjectCall::ChildEnded(ChildEndedCall {
                task_id,
                key,
                outcome,
            }) => self
                .engine
                .child_ended(&task_id, &key, &outcome)
                .map(|()| ObjectReply::Done),
            #[cfg(feature = "inspector")]
            ObjectCall::Wake(WakeCall { .. }) => {
                // The alarm handler never fails; what it could not do, its backstop retries.
                // Apart, so that a call compiles the alarm's code only when it wakes the task
                // (see `apart`).
                let _ = apart(self.alarm()).await;
                Ok(ObjectReply::Done)
            }
            #[cfg(task_listing)]
            ObjectCall::Listed(ListedCall { task_id, scope }) => self
                .engine
                .listed(&task_id, &scope)
                .map(|shown| shown.map_or(ObjectReply::Gone, ObjectReply::Snapshot)),
            #[cfg(feature = "inspector")]
            ObjectCall::Inspect(InspectCall {
                task_id,
                whole,
                filter,
            }) => self.inspect(&task_id, whole, filter.as_ref()),
            #[cfg(feature = "inspector")]
            ObjectCall::Operate(OperateCall { task_id, operation }) => self
                .engine
                .operate(&task_id, &operation)
                .map(|()| ObjectReply::Done),
        };
        outcome.unwrap_or_else(|error| RouteError::from(error).into())
    }

    async fn alarm(&self) -> worker::Result<Response> {
        let now = JsClock.now();
        // The backstop, in case this invocation dies: the tick sets the real wake-up when it
        // ends. Should this instance die (a crash of the runtime, which the platform may not
        // retry), the next one runs at once what this one left running: its engine did not
        // make this one's claim (see `Engine`'s recovery). While this engine holds a claim
        // of its own (an activation runs, or an abandoned one's lease is not over), the alarm
        // waits for the lease instead: an alarm at once would only find the task running.
        let task_id = self.state.id().name().unwrap_or_default();
        let backstop = if self.engine.holds_claim(&task_id) {
            now.saturating_add(self.settings.lease)
        } else {
            now
        };
        self.alarm.set(Some(backstop));
        if let Err(error) = self.tick().await {
            crate::core::trace::tick_failed(&task_id, &error);
            self.alarm.set(Some(now.saturating_add(RETRY_AFTER_ERROR)));
        }
        Response::ok("")
    }

    /// Ticks every task the object holds (one, or none once purged), and deletes the object's
    /// storage when none is left.
    async fn tick(&self) -> Result<(), EngineError> {
        // An object has one live instance, whose engine runs again at once an activation the
        // task's row says is running but which it did not start: it died with an earlier
        // instance (its isolate was evicted or crashed).
        let ids = self
            .store
            .task_ids()
            .map_err(|error| EngineError::Store(error.0))?;
        let mut left = ids.len();
        for task_id in &ids {
            match self.engine.tick_task(task_id).await? {
                TickEnd::Alive => {}
                #[cfg_attr(not(feature = "mcp-2025"), allow(unused_variables))]
                TickEnd::Gone { list_scope } => {
                    left -= 1;
                    #[cfg(feature = "mcp-2025")]
                    if let Some(scope) = list_scope {
                        self.forget(task_id, scope).await;
                    }
                    #[cfg(feature = "inspector")]
                    if self.inspected {
                        self.forget(task_id, EVERY_TASK_SCOPE.to_owned()).await;
                    }
                }
            }
        }
        if left == 0 {
            self.delete_all().await?;
        }
        Ok(())
    }

    /// What the inspector shows of the task: all of it, or its summary if `filter` keeps it.
    #[cfg(feature = "inspector")]
    fn inspect(
        &self,
        task_id: &str,
        whole: bool,
        filter: Option<&TaskFilter>,
    ) -> Result<ObjectReply, EngineError> {
        if whole {
            let state = self.engine.journal(task_id)?;
            return Ok(state.map_or(ObjectReply::Gone, |state| {
                ObjectReply::View(inspector::detail(&state))
            }));
        }
        let task = self.engine.task_record(task_id)?;
        Ok(match task {
            None => ObjectReply::Gone,
            Some(task) if filter.is_none_or(|filter| filter.keeps(&task)) => {
                ObjectReply::View(inspector::summary(&task))
            }
            Some(_) => ObjectReply::Skipped,
        })
    }

    /// Tells the listing index `scope` that the task is purged. Best effort: an id the index
    /// keeps is dropped by the next listing that meets it.
    #[cfg(task_listing)]
    async fn forget(&self, task_id: &str, scope: String) {
        let Some(index) = &self.index else { return };
        if let Err(error) = listing::forget(index, &scope, vec![task_id.to_owned()]).await {
            tracing::error!(
                target: crate::core::trace::TARGET,
                "telling the task index that {task_id} is purged: {}",
                error
            );
        }
    }

    /// Leaves no storage behind once the task is purged (or was never created).
    async fn delete_all(&self) -> Result<(), EngineError> {
        let storage = self.state.storage();
        let deleted = storage.delete_all().await;
        self.store.forget_tables();
        self.alarm.set(None);
        deleted.map_err(|error| EngineError::Store(format!("deleteAll: {error}")))
    }
}

thread_local! {
    /// The task registries, one per runner class, each built once per isolate: every object of
    /// a class runs the same tasks, and building a server (tool schemas included) for each
    /// would cost every new task.
    static REGISTRIES: RefCell<HashMap<&'static str, Rc<TaskRegistry>>> =
        RefCell::new(HashMap::new());
}

fn shared_registry(class: &'static str, server: impl FnOnce() -> McpServer) -> Rc<TaskRegistry> {
    REGISTRIES.with(|registries| {
        let mut registries = registries.borrow_mut();
        let built = registries
            .entry(class)
            .or_insert_with(|| Rc::new(server().task_registry()));
        Rc::clone(built)
    })
}

/// How soon an alarm that failed (the store failed) runs again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(1);
