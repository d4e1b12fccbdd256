//! The engine's control surface: create, get, update, cancel, and the tick a host calls when a
//! task's wake-up fires.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use super::driver::run_body;
use super::host::Host;
use super::in_flight::{InFlightMark, InFlightRegistry};
use super::ports::StoreError;
use super::registry::{TaskDefinition, TaskRegistry};
use super::route::{OwnTasks, TaskRoute};
use super::watch::{PublishingStore, Sink, Watchers};
use crate::core::child::{self, ChildOutcome};
use crate::core::control::{self, NewTask, TaskSnapshot};
use crate::core::limits::to_stored_json;
use crate::core::listing::{ListPage, ListPosition, PageBuilder, is_listed};
use crate::core::outcome::{BodyOutcome, End, Suspension};
use crate::core::schedule;
use crate::core::tick::{self, Command, Event, MAX_CONFLICTS, Tick};
use crate::core::trace;
use crate::core::{
    Applied, EngineError, Guard, Limits, LoadScope, ParentLink, TaskRecord, TaskState, TaskStatus,
    Timestamp, Write,
};

/// What [`Engine::create_task`] creates: [`CreateTask::new`], then the setters for what
/// differs from the definition's defaults. More fields may come in a minor release.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CreateTask {
    /// The registered task to run.
    pub tool_name: String,
    /// Its input.
    pub input: Value,
    /// Retention override; the definition's when `None`.
    pub ttl: Option<Option<Duration>>,
    /// The principal the task is bound to.
    pub principal: Option<String>,
    /// The listing the task appears in: a key naming its creator (the router uses
    /// `principal:<p>` for an authenticated caller, `session:<id>` for an anonymous one with a
    /// session), passed back to [`Engine::list`]. `None`: the task is never listed.
    pub list_scope: Option<String>,
    /// A caller-chosen id (for idempotent creation); 128 random bits when `None`.
    pub task_id: Option<String>,
    /// The task that starts this one as its child (set by
    /// [`TaskContext::start_child`](crate::TaskContext::start_child)); `None` for a task a
    /// client creates.
    pub parent: Option<ParentLink>,
}

impl CreateTask {
    /// A task of `tool_name` with `input` and the definition's options.
    pub fn new(tool_name: impl Into<String>, input: Value) -> Self {
        CreateTask {
            tool_name: tool_name.into(),
            input,
            ttl: None,
            principal: None,
            list_scope: None,
            task_id: None,
            parent: None,
        }
    }

    /// Overrides the definition's retention (`None`: the task is kept forever).
    #[must_use]
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Binds the task to `principal`.
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// Lists the task under `scope`, a key naming its creator, passed back to [`Engine::list`].
    #[must_use]
    pub fn list_scope(mut self, scope: impl Into<String>) -> Self {
        self.list_scope = Some(scope.into());
        self
    }

    /// Creates the task under `task_id` instead of a random one (for idempotent creation).
    #[must_use]
    pub fn task_id(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// Makes the task a child of the task `parent` names.
    #[must_use]
    pub fn parent(mut self, parent: ParentLink) -> Self {
        self.parent = Some(parent);
        self
    }
}

/// The durable task engine of one host.
///
/// Hosts call [`tick`](Engine::tick) for a task when the wake-up they were given through their
/// [`Scheduler`](super::Scheduler) fires, and [`recover`](Engine::recover) once at start (or
/// tick each stored task once, as they see fit).
///
/// # Recovery
///
/// An engine knows the claims it made (an activation it started, by the lease's generation)
/// until it sees them settle. A claim in a task's row that it did not make belongs to an engine
/// that is gone, with its host: the first tick of each task since this engine started finds
/// such a claim, and runs the task again at once instead of when the dead claim's lease runs
/// out. Every host recovers this way, whatever drives its ticks. One store must therefore have
/// one live engine per task: one process per data directory natively, one instance per Durable
/// Object on Workers.
pub struct Engine {
    host: Host,
    registry: Rc<TaskRegistry>,
    limits: Limits,
    lease: Duration,
    hand_off: Option<Duration>,
    in_flight: InFlightRegistry,
    /// The claims this engine made and has not seen settle: task id to the claim's generation.
    claims: RefCell<HashMap<String, u64>>,
    /// How this engine reaches other tasks (a child to start or cancel, a parent to tell).
    tasks: RefCell<Option<Reach>>,
    /// Who follows which task's changes; the host's store tells them of each commit.
    watchers: Rc<Watchers>,
}

/// How an engine reaches other tasks.
enum Reach {
    /// In its own store, through a route it holds (which does not hold the engine).
    Own(Rc<OwnTasks>),
    /// Through the host's route, which usually holds the engine.
    Host(Weak<dyn TaskRoute>),
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("tasks", &self.registry.names())
            .field("limits", &self.limits)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

/// How long after an activation starts the body is run again if that activation never settles
/// (its host died). A host's in-flight bookkeeping keeps a live activation from being doubled.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

impl Engine {
    /// An engine running `registry`'s tasks on `host`.
    pub fn new(registry: TaskRegistry, host: Host) -> Self {
        Engine::with_shared_registry(Rc::new(registry), host)
    }

    /// An engine running the tasks of a registry shared with other engines (a Worker isolate
    /// builds its registry once for all the objects it hosts).
    pub fn with_shared_registry(registry: Rc<TaskRegistry>, mut host: Host) -> Self {
        let watchers = Rc::new(Watchers::default());
        host.store = Rc::new(PublishingStore {
            inner: host.store,
            watchers: Rc::clone(&watchers),
        });
        Engine {
            host,
            registry,
            limits: Limits::DEFAULT,
            lease: DEFAULT_LEASE,
            hand_off: None,
            in_flight: InFlightRegistry::default(),
            claims: RefCell::default(),
            tasks: RefCell::new(None),
            watchers,
        }
    }

    /// Replaces the size limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Replaces the redelivery lease ([`DEFAULT_LEASE`]).
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Ends an activation that has run for `after` at its next new step attempt, and runs
    /// the body on in a fresh activation at once (its recorded steps replay). A host whose
    /// activations have a wall-clock limit (a Durable Object's alarm handler) sets this below
    /// the limit; without it an activation runs until the body suspends or returns.
    #[must_use]
    pub fn hand_off(mut self, after: Duration) -> Self {
        self.hand_off = Some(after);
        self
    }

    /// Presumes an activation abandoned once its lease is over: a tick after that runs the
    /// body again even if the activation's future was never dropped. A host whose platform may
    /// stop polling a handler without dropping it (a Durable Object whose alarm handler was
    /// cancelled while the isolate lives on) sets this, together with a
    /// [hand-off](Self::hand_off) shorter than the lease so that live activations end in
    /// time. Without it an activation counts as running until its future is dropped, however
    /// long it takes, which is right for a host that drops what it stops polling (the native
    /// host).
    #[must_use]
    pub fn expire_activations_with_their_lease(mut self) -> Self {
        self.in_flight.expire_marks_with_their_lease();
        self
    }

    /// Reaches other tasks (children to start and cancel, parents to tell that a child
    /// ended) through `tasks`: the host's task route, which sends each operation to the
    /// task's owner. Held weakly, since a host's route usually holds its engine: the host keeps
    /// it alive as long as the engine. Without a route, a body that starts a child task fails.
    pub fn reach_tasks_through(&self, tasks: Weak<dyn TaskRoute>) {
        *self.tasks.borrow_mut() = Some(Reach::Host(tasks));
    }

    /// Reaches other tasks in this engine's own store: for an engine that holds every task
    /// (one process, one store). [`Router::new`](crate::http::Router::new) sets it.
    pub fn reach_own_tasks(self: &Rc<Self>) {
        let own = Rc::new(OwnTasks::within(self));
        *self.tasks.borrow_mut() = Some(Reach::Own(own));
    }

    /// The route other tasks are reached through, if the host set one.
    pub(crate) fn tasks(&self) -> Option<Rc<dyn TaskRoute>> {
        match self.tasks.borrow().as_ref()? {
            Reach::Own(own) => Some(Rc::clone(own) as Rc<dyn TaskRoute>),
            Reach::Host(host) => host.upgrade(),
        }
    }

    /// The registered tasks.
    pub fn registry(&self) -> &TaskRegistry {
        &self.registry
    }

    /// The host's ports.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Creates a task of `tool_name` with `input` and returns its snapshot. The task is stored
    /// and scheduled when this returns.
    pub fn create(&self, tool_name: &str, input: Value) -> Result<TaskSnapshot, EngineError> {
        self.create_task(CreateTask::new(tool_name, input))
    }

    /// Creates a task as `request` says. Creating again with the same id and tool returns the
    /// existing task unchanged; with another tool it is an error.
    pub fn create_task(&self, request: CreateTask) -> Result<TaskSnapshot, EngineError> {
        let definition = self.definition(&request.tool_name)?;
        let input = to_stored_json(&self.limits, || "the task input".to_owned(), &request.input)?;
        let options = definition.task_options();
        let new = NewTask {
            task_id: match request.task_id {
                Some(id) => id,
                None => new_task_id()?,
            },
            tool_name: request.tool_name,
            input,
            ttl: request.ttl.unwrap_or(options.ttl),
            poll_interval: options.poll_interval,
            principal: request.principal,
            list_scope: request.list_scope,
            code_version: self.registry.version().map(str::to_owned),
            parent: request.parent,
        };
        let record = control::new_task_record(new.clone(), self.host.clock.now());
        let stored = self.host.store.create(&record).map_err(store_error)?;
        control::check_duplicate_create(&stored, &new)?;
        let state = TaskState {
            task: stored,
            steps: Default::default(),
            inputs: Default::default(),
        };
        let state = if state.task == record {
            trace::task_created(&state.task);
            state
        } else {
            self.load(&new.task_id, LoadScope::Control)?
                .unwrap_or(state)
        };
        self.reschedule(&state);
        Ok(control::snapshot(&state))
    }

    /// The task's snapshot as `caller` may see it. Never writes.
    pub fn get(&self, task_id: &str, caller: Option<&str>) -> Result<TaskSnapshot, EngineError> {
        self.snapshot_as(task_id, Access::Caller(caller))
    }

    /// The task's snapshot as `access` may see it, and from now on its snapshot after each
    /// write that may change it, sent to `sink` (see [`TaskChanges`](super::TaskChanges)).
    /// Both happen at once: no write comes between the snapshot and the watch.
    pub(crate) fn watch(
        &self,
        task_id: &str,
        access: Access<'_>,
        sink: Box<dyn Sink>,
    ) -> Result<TaskSnapshot, EngineError> {
        let snapshot = self.snapshot_as(task_id, access)?;
        self.watchers.add(task_id, sink);
        Ok(snapshot)
    }

    /// The task's snapshot as `access` may see it. Never writes.
    pub(crate) fn snapshot_as(
        &self,
        task_id: &str,
        access: Access<'_>,
    ) -> Result<TaskSnapshot, EngineError> {
        self.visible(task_id, access)
            .map(|state| control::snapshot(&state))
    }

    /// One page of the tasks created with the listing scope `scope`, oldest first (by creation
    /// time, then id), strictly after `after` (from the first when `None`), of at most
    /// `limit` tasks (at least one, at most 100). A task is shown from its creation until its
    /// purge time. The page's `next` is where the
    /// following page starts; `None` on the last page. Tasks created between two pages appear
    /// on a later page; none is shown twice. Never writes.
    pub fn list(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<ListPage<TaskSnapshot>, EngineError> {
        let store = &self.host.store;
        page_through(
            after,
            limit,
            |after, wanted| store.list_tasks(scope, after, wanted),
            |task| self.listed_snapshot(task, self.host.clock.now()),
        )
    }

    /// The task's snapshot if it is shown in the listing `scope` now: it exists, was created
    /// with that scope, and is not past its purge time. `None` otherwise. Never writes. (The
    /// Cloudflare host asks each listed task's own object this.)
    pub fn listed(&self, task_id: &str, scope: &str) -> Result<Option<TaskSnapshot>, EngineError> {
        let Some(state) = self.load(task_id, LoadScope::Control)? else {
            return Ok(None);
        };
        if state.task.list_scope.as_deref() != Some(scope) {
            return Ok(None);
        }
        let now = self.host.clock.now();
        Ok(is_listed(&state.task, now).then(|| control::snapshot(&state)))
    }

    /// Records input responses (`{key: response object}`): the first answer to a key wins,
    /// unknown keys are ignored, and a finished task, or one whose cancellation is recorded,
    /// ignores them all (it ends `cancelled` whatever is answered). A malformed payload is
    /// refused before anything is written.
    pub fn update(
        &self,
        task_id: &str,
        responses: &Value,
        caller: Option<&str>,
    ) -> Result<(), EngineError> {
        self.update_as(task_id, responses, Access::Caller(caller))
    }

    /// Asks a live task to stop; it is `cancelled` once that is observed (at once when nothing
    /// runs, else at the body's next step boundary). Idempotent; a finished task stays as it is.
    pub fn cancel(&self, task_id: &str, caller: Option<&str>) -> Result<(), EngineError> {
        self.cancel_as(task_id, Access::Caller(caller))
    }

    /// The task's row, whoever created it; `None` if there is no such task. Never writes.
    #[cfg(all(cloudflare_host, feature = "inspector"))]
    pub(crate) fn task_record(&self, task_id: &str) -> Result<Option<TaskRecord>, EngineError> {
        Ok(self
            .load(task_id, LoadScope::Control)?
            .map(|state| state.task))
    }

    /// Carries out an operator's `operation` on the task, whoever created it.
    #[cfg(all(any_host, feature = "inspector"))]
    pub(crate) fn operate(
        &self,
        task_id: &str,
        operation: &control::Operation,
    ) -> Result<(), EngineError> {
        match operation {
            control::Operation::Cancel => self.cancel_as(task_id, Access::Engine),
            control::Operation::Answer(responses) => {
                self.update_as(task_id, responses, Access::Engine)
            }
            control::Operation::Wake => self
                .control_write(task_id, Access::Engine, control::plan_wake)
                .map(drop),
        }
    }

    /// One page of every task, whatever its listing scope, that `shown` keeps, oldest first,
    /// strictly after `after`, of at most `limit` rows: what the inspector lists. Never writes.
    #[cfg(all(native_host, feature = "inspector"))]
    pub(crate) fn every_task(
        &self,
        after: Option<&ListPosition>,
        limit: usize,
        shown: impl Fn(&TaskRecord) -> bool,
    ) -> Result<ListPage<TaskRecord>, EngineError> {
        let store = &self.host.store;
        page_through(
            after,
            limit,
            |after, wanted| store.list_every_task(after, wanted),
            |task| Ok(shown(&task).then_some(task)),
        )
    }

    fn update_as(
        &self,
        task_id: &str,
        responses: &Value,
        access: Access<'_>,
    ) -> Result<(), EngineError> {
        let responses = control::validate_responses(responses, &self.limits)?;
        self.control_write(task_id, access, |state, now| {
            control::plan_update(state, &responses, now)
        })?;
        Ok(())
    }

    fn cancel_as(&self, task_id: &str, access: Access<'_>) -> Result<(), EngineError> {
        // A task that is not running is settled in the same write.
        let settle = !self.is_running(task_id);
        self.control_write(task_id, access, |state, now| {
            control::plan_cancel(state, now, settle)
        })?;
        Ok(())
    }

    /// Records in the parent task `parent_id` that its child, started under `key`, ended with
    /// `outcome`, and wakes the parent. The first outcome for a key is kept; one for a start
    /// the parent no longer waits on, or for a parent that ended or is gone, changes nothing.
    pub(crate) fn child_ended(
        &self,
        parent_id: &str,
        key: &str,
        outcome: &ChildOutcome,
    ) -> Result<(), EngineError> {
        match self.control_write(parent_id, Access::Engine, |state, now| {
            child::plan_child_ended(state, key, outcome, now)
        }) {
            Err(EngineError::NotFound { .. }) => Ok(()),
            other => other.map(drop),
        }
    }

    /// What the host calls when the task's wake-up fires: purges, expires, settles a
    /// cancellation, times out elicitations, or runs the body, as due; the first tick since
    /// this engine started also runs again at once an activation that died with an earlier
    /// host (see [Recovery](Engine#recovery)). Calling it when nothing is due, twice, or while
    /// the task runs elsewhere on this engine is harmless.
    pub async fn tick(&self, task_id: &str) -> Result<(), EngineError> {
        self.tick_task(task_id).await.map(drop)
    }

    /// Carries out the commands of a [`Tick`] of the task until it is over, and says how it
    /// ended.
    pub(crate) async fn tick_task(&self, task_id: &str) -> Result<TickEnd, EngineError> {
        if self.is_running(task_id) {
            // The running activation settles the task and sets its next wake-up itself.
            return Ok(TickEnd::Alive);
        }
        let own_claim = self.claims.borrow().get(task_id).copied();
        let mut tick = Tick::new(task_id, self.lease, self.limits).with_own_claim(own_claim);
        let mut command = tick.start();
        // Once this tick's claim has settled (or the task is gone), the engine forgets it; a
        // tick that fails on the way keeps it, and its anchor stands.
        let mut claimed = false;
        let settled = |claimed: bool, ended: TickEnd| {
            if claimed || matches!(ended, TickEnd::Gone { .. }) {
                self.claims.borrow_mut().remove(task_id);
            }
            Ok(ended)
        };
        loop {
            let event = match command {
                Command::Load(scope) => Event::Loaded(self.load(task_id, scope)?),
                Command::Apply { guard, writes } => {
                    Event::Applied(self.apply(task_id, guard, &writes)?)
                }
                Command::Run(journal) => {
                    let generation = journal.task.generation;
                    self.claims
                        .borrow_mut()
                        .insert(task_id.to_owned(), generation);
                    claimed = true;
                    Event::Ran(self.run(journal).await)
                }
                Command::Notify { parent, outcome } => {
                    Event::Notified(self.notify(&parent, &outcome).await)
                }
                Command::Purge => {
                    self.host.store.purge(task_id).map_err(store_error)?;
                    Event::Purged
                }
                Command::Sleep(wake) => {
                    self.host.scheduler.schedule(task_id, wake);
                    return settled(claimed, TickEnd::Alive);
                }
                Command::Gone { list_scope } => {
                    self.host.scheduler.schedule(task_id, None);
                    return settled(claimed, TickEnd::Gone { list_scope });
                }
            };
            command = tick.handle(event, self.host.clock.now())?;
        }
    }

    /// Schedules a tick of every stored task now, after a restart: it writes nothing, and each
    /// task's tick does the rest, running at once an activation that died with the host (see
    /// [Recovery](Engine#recovery)). Returns how many tasks were found.
    pub fn recover(&self) -> Result<usize, EngineError> {
        let ids = self.host.store.task_ids().map_err(store_error)?;
        let now = self.host.clock.now();
        for id in &ids {
            self.host.scheduler.schedule(id, Some(now));
        }
        Ok(ids.len())
    }

    /// Whether this engine made a claim on the task that it has not seen settle: an
    /// activation of it runs, or one ended without settling (its anchor stands).
    #[cfg(cloudflare_host)]
    pub(crate) fn holds_claim(&self, task_id: &str) -> bool {
        self.claims.borrow().contains_key(task_id)
    }

    /// The task and its whole journal, for tests and inspection. Never writes.
    pub fn journal(&self, task_id: &str) -> Result<Option<TaskState>, EngineError> {
        self.load(task_id, LoadScope::Full)
    }

    /// Whether an activation of the task is running on this engine: one started and not
    /// finished (and, with
    /// [`expire_activations_with_their_lease`](Self::expire_activations_with_their_lease),
    /// within its lease).
    pub fn is_running(&self, task_id: &str) -> bool {
        self.in_flight.is_running(task_id, self.host.clock.now())
    }

    // ---- internals ----

    /// The snapshot of a listed row, if it is shown at `now`: only a task waiting for input
    /// shows more than its row (its open requests), so only then are its inputs read.
    fn listed_snapshot(
        &self,
        task: TaskRecord,
        now: Timestamp,
    ) -> Result<Option<TaskSnapshot>, EngineError> {
        if !is_listed(&task, now) {
            return Ok(None);
        }
        if task.status == TaskStatus::InputRequired {
            let state = self.load(&task.task_id, LoadScope::Control)?;
            return Ok(state.map(|state| control::snapshot(&state)));
        }
        let state = TaskState {
            task,
            steps: Default::default(),
            inputs: Default::default(),
        };
        Ok(Some(control::snapshot(&state)))
    }

    /// Tells the parent of an ended child task how it ended; `false` (to try again later) if
    /// the parent could not be reached.
    async fn notify(&self, parent: &ParentLink, outcome: &ChildOutcome) -> bool {
        let Some(tasks) = self.tasks() else {
            return false;
        };
        tasks
            .child_ended(&parent.task_id, &parent.key, outcome)
            .await
            .is_ok()
    }

    /// Runs the body of a claimed journal on this engine, marked as running until it stops.
    async fn run(&self, journal: TaskState) -> BodyOutcome {
        let task = &journal.task;
        let Ok(definition) = self.definition(&task.tool_name).cloned() else {
            let error = EngineError::UnknownTask {
                name: task.tool_name.clone(),
            };
            return BodyOutcome::Stopped(End {
                suspension: Suspension::Fail(error),
                rerun: false,
            });
        };
        let mark = InFlightMark {
            generation: task.generation,
            expires_at: task.next_run_at.unwrap_or(Timestamp::MAX),
        };
        let task_id = task.task_id.clone();
        let _running = self.in_flight.enter(&task_id, mark);
        let hand_off_at = self
            .hand_off
            .map(|after| self.host.clock.now().saturating_add(after));
        let tasks = self.tasks();
        // The application's events in the body and its steps carry the task's id and tool. At
        // the highest level, so that the span is there whatever level lets an event through.
        let span = tracing::error_span!(
            target: trace::TARGET, "task", task_id = %task_id, tool = %definition.name(),
            root_task_id = %task.root_id()
        );
        run_body(
            &self.host,
            tasks,
            &definition,
            journal,
            self.limits,
            hand_off_at,
        )
        .instrument(span)
        .await
    }

    fn definition(&self, name: &str) -> Result<&TaskDefinition, EngineError> {
        self.registry
            .get(name)
            .ok_or_else(|| EngineError::UnknownTask {
                name: name.to_owned(),
            })
    }

    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, EngineError> {
        self.host.store.load(task_id, scope).map_err(store_error)
    }

    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, EngineError> {
        self.host
            .store
            .apply(task_id, guard, writes)
            .map_err(store_error)
    }

    fn visible(&self, task_id: &str, access: Access<'_>) -> Result<TaskState, EngineError> {
        self.load(task_id, LoadScope::Control)?
            .filter(|state| match access {
                Access::Engine => true,
                Access::Caller(caller) => state.task.visible_to(caller),
            })
            .ok_or_else(|| EngineError::NotFound {
                task_id: task_id.to_owned(),
            })
    }

    /// Read, decide, write under the version read; again if another writer came first. Once
    /// the writes commit, sets the next wake-up from the state they produced (the guard held,
    /// so the loaded state plus the writes is what the store holds). Returns the task as
    /// written (or as read, when there was nothing to write).
    fn control_write(
        &self,
        task_id: &str,
        access: Access<'_>,
        plan: impl Fn(&TaskState, Timestamp) -> Vec<Write>,
    ) -> Result<TaskState, EngineError> {
        for _ in 0..MAX_CONFLICTS {
            let mut state = self.visible(task_id, access)?;
            let writes = plan(&state, self.host.clock.now());
            if writes.is_empty() {
                return Ok(state);
            }
            let guard = Guard {
                version: Some(state.task.version),
                generation: None,
            };
            if self.apply(task_id, guard, &writes)? != Applied::Stale {
                trace::written(&state, &writes);
                state.apply_guarded(guard, &writes);
                self.reschedule(&state);
                return Ok(state);
            }
        }
        Err(tick::conflict(task_id))
    }

    fn reschedule(&self, state: &TaskState) {
        let wake = schedule::next_wake(state);
        self.host.scheduler.schedule(&state.task.task_id, wake);
    }
}

/// How a tick ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TickEnd {
    /// The task lives on (its wake-up is set).
    Alive,
    /// The task has no rows: it was purged (from the listing `list_scope`, if any) or never
    /// existed.
    Gone {
        /// The listing the purged task was in.
        list_scope: Option<String>,
    },
}

/// Who reads a task: a caller, checked against the task's principal, or the engine itself
/// (and the host's operator, through the inspector).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Access<'a> {
    Engine,
    Caller(Option<&'a str>),
}

/// One page of at most `limit` items, strictly after `after`: the task rows `read` gives (up
/// to `wanted` of them after a position, in listing order), each made an item by `shown` or
/// left out. Reads on until the page is full or the rows run out.
fn page_through<T>(
    after: Option<&ListPosition>,
    limit: usize,
    read: impl Fn(Option<&ListPosition>, usize) -> Result<Vec<TaskRecord>, StoreError>,
    shown: impl Fn(TaskRecord) -> Result<Option<T>, EngineError>,
) -> Result<ListPage<T>, EngineError> {
    let mut page = PageBuilder::new(limit);
    let mut after = after.cloned();
    loop {
        let wanted = page.wanted();
        let rows = read(after.as_ref(), wanted).map_err(store_error)?;
        let exhausted = rows.len() < wanted;
        for task in rows {
            let position = ListPosition::of(&task);
            page.offer(position, shown(task)?);
        }
        if exhausted || page.wanted() == 0 {
            return Ok(page.finish(exhausted));
        }
        after = page.resume_after().cloned();
    }
}

fn store_error(error: StoreError) -> EngineError {
    EngineError::Store(error.0)
}

/// 128 random bits from the operating system, as 32 lowercase hex digits.
pub fn new_task_id() -> Result<String, EngineError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| EngineError::Store(format!("the OS random source failed: {error}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
