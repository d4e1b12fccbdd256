//! `TaskContext`: the API a task body runs against, a thin async shell over the activation's
//! state machine ([`Activation`]).
//!
//! Every operation asks the machine, which decides from the journal as this activation has
//! changed it: a hit returns what was recorded without running anything; a miss runs (or
//! records) the operation, and the machine's writes go to the store at once, guarded by the
//! activation's lease. When the body must wait (a sleep, a retry backoff, an unanswered
//! elicitation), is cancelled, or hits an engine failure, the machine records why and the
//! operation never completes: the driver settles the task and drops the body's future. No user
//! code runs past such a point.
//!
//! Journal keys are claimed when an operation is *called*, not when its future is first
//! polled, so they follow the order of the calls (see [`TaskContext`] on concurrency).

mod children;

use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument;

use super::current::without_current;
use super::error::{ElicitOutcome, StepError, TaskError};
use super::host::Host;
use super::pacer::Pacer;
use super::ports::{LocalBoxFuture, StoreError};
use super::route::TaskRoute;
use super::step;
use crate::core::activation::draws;
use crate::core::activation::{
    Activation, AttemptId, AttemptResult, CheckNext, Decision, ElicitNext, Settings, StepEnd,
    StepNext, Stop,
};
use crate::core::outcome::End;
use crate::core::step_failure::StepFailure;
use crate::core::trace;
use crate::core::{EngineError, Limits, RetryPolicy, TaskState, Timestamp, parse_duration};

pub use children::{ChildTask, ChildTool};

/// A duration given to [`TaskContext::sleep`] and the other calls that wait: a [`Duration`] or
/// a string.
///
/// Write a literal with [`duration!`](crate::duration): `duration!("5s")` is a `Duration`
/// checked at compile time, so a malformed literal does not build. A string (`"5s"`) is parsed
/// with [`parse_duration`](crate::parse_duration) when the call runs, and a malformed one fails
/// the task there: keep it for text only known at run time, such as a setting.
pub trait IntoDelay {
    /// The duration, or the parse error of a malformed string.
    fn into_delay(self) -> Result<Duration, crate::core::DurationError>;
}

impl IntoDelay for Duration {
    fn into_delay(self) -> Result<Duration, crate::core::DurationError> {
        Ok(self)
    }
}

impl IntoDelay for &str {
    fn into_delay(self) -> Result<Duration, crate::core::DurationError> {
        parse_duration(self)
    }
}

/// The context of one running task: journaled steps, durable sleeps, input, status.
///
/// A body receives `&TaskContext` and must reach the outside world only through its steps:
/// everything outside a step re-runs on every replay, so it has to be deterministic (branch on
/// step results and on what the context records, [`now`](Self::now),
/// [`random_u64`](Self::random_u64) and [`uuid`](Self::uuid), never on clocks or randomness read
/// any other way).
///
/// # Concurrency inside a body
///
/// Steps may run concurrently (`futures::join!`, `try_join_all`, `select!`), with these rules:
/// - A journal key is claimed when the operation is *called* (`cx.step(..)`, `cx.sleep(..)`,
///   a `#[step]` fn with owned arguments), in call order. `try_join_all(items.map(|i|
///   fetch(i)))` gets `fetch`, `fetch#2`, ... in the iterator's order on every run, and
///   [`idempotency_key`](Self::idempotency_key) names the key the next call gets. Branches
///   that each run several steps one after another break ties by timing, which differs
///   between a first run and a replay: give such branches their own step names (say, with the
///   item's id in the name).
/// - When one branch must wait (a retry backoff, a sleep, an unanswered elicitation), only
///   that branch stops: the others go on until the whole body pauses with no step attempt
///   running, and every attempt they ran is recorded. Then the activation ends; if an attempt
///   recorded a result after the wait was asked for, the body runs again at once, so a step
///   raced against a durable timeout (`select!` of a step and a `sleep`) is seen as soon as
///   it finishes. A cancellation, a failure or a lost lease ends the activation at once;
///   attempts still running are dropped and run again if the task goes on.
/// - A step's closure runs outside the task: a `#[step]` fn called inside it simply runs, as
///   part of the outer step's attempt. Calling this context from inside a step's closure fails
///   the task, with an error that names both the outer step and the inner call.
pub struct TaskContext {
    /// The machine knows the task's id too, but `task_id()` lends a `&str`, which the machine
    /// inside its `RefCell` cannot: this copy, made once, is never changed.
    task_id: String,
    machine: RefCell<Activation>,
    host: Host,
    pacer: Pacer,
    /// The compensations this run registered, in call order, under their keys.
    compensations: RefCell<Vec<(Decision<String>, Compensation)>>,
    /// How the host reaches other tasks (children), if it does.
    tasks: Option<Rc<dyn TaskRoute>>,
    /// The task's principal and listing, which its children share.
    principal: Option<String>,
    list_scope: Option<String>,
    /// How many awaits of the context's own (a yield to the host, a call to another task) are
    /// under way: the body may still go on by itself.
    busy: Cell<u32>,
    /// The operations waiting for new ground to be judged (see
    /// [`judge_deferred_ground`](Self::judge_deferred_ground)).
    deferred: RefCell<Vec<Waker>>,
}

/// A compensation's closure, its value serialised.
type Compensation = Box<dyn FnOnce() -> LocalBoxFuture<'static, Result<Value, StepError>>>;

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.task_id)
            .finish_non_exhaustive()
    }
}

pub(crate) struct ContextParts {
    pub journal: TaskState,
    pub host: Host,
    pub tasks: Option<Rc<dyn TaskRoute>>,
    pub retry: RetryPolicy,
    pub step_timeout: Duration,
    pub limits: Limits,
    /// When a new step attempt is no longer started in this activation.
    pub hand_off_at: Option<Timestamp>,
}

impl TaskContext {
    pub(crate) fn new(parts: ContextParts) -> Self {
        let pacer = Pacer::new(parts.host.clock.now());
        let settings = Settings {
            retry: parts.retry,
            step_timeout: parts.step_timeout,
            limits: parts.limits,
            hand_off_at: parts.hand_off_at,
        };
        TaskContext {
            task_id: parts.journal.task.task_id.clone(),
            principal: parts.journal.task.principal.clone(),
            list_scope: parts.journal.task.list_scope.clone(),
            tasks: parts.tasks,
            machine: RefCell::new(Activation::new(parts.journal, settings)),
            host: parts.host,
            pacer,
            compensations: RefCell::default(),
            busy: Cell::new(0),
            deferred: RefCell::default(),
        }
    }

    /// The id of this task.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// Who started the task (a child task: who started its parent): the principal it is
    /// bound to, the same on every activation. With MCP authorization it is
    /// `<issuer>#<subject>` of the access token that started it
    /// ([`Principal::binding`](crate::auth::Principal::binding)); with an
    /// [`authenticate`](crate::McpServer::authenticate) hook, what the hook returned; `None`
    /// for an anonymous caller.
    ///
    /// The caller's token itself never reaches the task: it expires long before many tasks
    /// end, and passing it on to another service would make this server a confused deputy.
    /// A step that calls an upstream API uses credentials of the server's own.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// A key for external deduplication of the side effect of the next `step` named `step`
    /// that this run calls: `"<task id>:<journal key>"`, the same on every attempt and replay.
    /// Call it just before the step; in a loop each occurrence gets its own (`<id>:send`,
    /// `<id>:send#2`, ...).
    pub fn idempotency_key(&self, step: &str) -> String {
        self.with(|m| m.idempotency_key(step))
    }

    /// A journaled step: runs `closure` once and records its value; on replay returns the
    /// recorded value without running it.
    ///
    /// The step is keyed by `name` plus its occurrence in the run (`name`, `name#2`, ...),
    /// claimed now, when the step is called. A failed attempt is retried after a backoff
    /// under the task's retry policy (or [`Step::retry`]); the task sleeps durably in between.
    /// A panic in the closure is a failed attempt. Once no attempt is left, or the closure
    /// returned [`StepError::non_retryable`], the step fails for good and this returns
    /// [`TaskError::StepFailed`] (now and on every replay).
    pub fn step<'a, T, F, Fut>(&'a self, name: &str, closure: F) -> Step<'a, F, T>
    where
        T: Serialize + DeserializeOwned + 'a,
        F: FnOnce() -> Fut + 'a,
        Fut: Future<Output = Result<T, StepError>> + 'a,
    {
        self.claimed_step(self.claim(name), closure)
    }

    /// Claims the journal key of the next occurrence of `name`.
    pub(crate) fn claim(&self, name: &str) -> Decision<String> {
        self.with(|m| m.claim(name))
    }

    /// The step under a key claimed earlier.
    pub(crate) fn claimed_step<'a, T, F, Fut>(
        &'a self,
        key: Decision<String>,
        closure: F,
    ) -> Step<'a, F, T>
    where
        T: Serialize + DeserializeOwned + 'a,
        F: FnOnce() -> Fut + 'a,
        Fut: Future<Output = Result<T, StepError>> + 'a,
    {
        Step {
            cx: self,
            key,
            closure: Some(closure),
            retry: None,
            timeout: None,
            running: None,
        }
    }

    /// Sleeps durably for `duration`; the task is unloaded meanwhile and resumes when the time
    /// comes, across restarts. A wake time past [`Timestamp::MAX`] (the latest every host can
    /// store) is that time.
    ///
    /// `duration` is a [`Duration`]: for a literal, `duration!("5s")`, checked at compile time
    /// (see [`duration!`](crate::duration)). A string read at run time is taken too (see
    /// [`IntoDelay`]); a malformed one fails the task at this sleep.
    pub fn sleep<'a>(
        &'a self,
        name: &str,
        duration: impl IntoDelay,
    ) -> LocalBoxFuture<'a, Result<(), TaskError>> {
        let key = self.with(|m| m.claim(name));
        let duration = duration.into_delay();
        Box::pin(async move {
            let key = self.proceed(key).await;
            self.act(|m, now| m.sleep(&key, duration, now)).await;
            Ok(())
        })
    }

    /// Sleeps durably until `when` (milliseconds since the epoch; times past
    /// [`Timestamp::MAX`], the latest every host can store, wake at that time).
    pub fn sleep_until<'a>(
        &'a self,
        name: &str,
        when: Timestamp,
    ) -> LocalBoxFuture<'a, Result<(), TaskError>> {
        let key = self.with(|m| m.claim(name));
        Box::pin(async move {
            let key = self.proceed(key).await;
            self.act(|m, now| m.sleep_until(&key, when, now)).await;
            Ok(())
        })
    }

    /// Asks the client for input and waits, durably, for the answer: the task shows as
    /// `input_required` with `request` under the step's key until a `tasks/update` answers it.
    /// Returns the client's response object (an elicitation result:
    /// `{"action": "accept" | "decline" | "cancel", "content": {...}}`).
    ///
    /// `request` is what `elicitation/create` takes as params; `tasks/get` shows it as
    /// `{"method": "elicitation/create", "params": request}`. Clients show a form request: a
    /// message, and an object schema of flat fields (strings, numbers, booleans, enums) to fill
    /// in, such as
    ///
    /// ```json
    /// {
    ///     "mode": "form",
    ///     "message": "Delete a.txt?",
    ///     "requestedSchema": {
    ///         "type": "object",
    ///         "properties": { "confirm": { "type": "boolean", "title": "Delete it" } },
    ///         "required": ["confirm"]
    ///     }
    /// }
    /// ```
    ///
    /// which a client answers with `{"action": "accept", "content": {"confirm": true}}`. A URL
    /// request, `{"mode": "url", "message": ..., "url": "https://..."}`, asks the user to open a
    /// page instead. Any other request fails the task where it is asked, with an error that
    /// says how to write one.
    pub fn elicit<'a>(
        &'a self,
        name: &str,
        request: impl Serialize,
    ) -> LocalBoxFuture<'a, Result<Value, TaskError>> {
        let name = name.to_owned();
        let elicited = self.elicit_inner(&name, &request, None);
        Box::pin(async move {
            match elicited.await {
                ElicitOutcome::Answered(response) => Ok(response),
                ElicitOutcome::TimedOut => {
                    unreachable!("elicitation {name:?} was asked without a timeout but timed out")
                }
            }
        })
    }

    /// Like [`elicit`](Self::elicit), but gives up after `timeout` (counted from the first time
    /// the request was recorded): returns [`ElicitOutcome::TimedOut`] then, and ignores a later
    /// answer. `timeout` is a duration as for [`sleep`](Self::sleep): `duration!("1h")`.
    pub fn elicit_with_timeout<'a>(
        &'a self,
        name: &str,
        request: impl Serialize,
        timeout: impl IntoDelay,
    ) -> LocalBoxFuture<'a, Result<ElicitOutcome, TaskError>> {
        let timeout = match timeout.into_delay() {
            Ok(timeout) => timeout,
            Err(source) => {
                let what = format!("the timeout of elicitation {name:?}");
                let stop = self.with(|m| m.fail(EngineError::InvalidDuration { what, source }));
                return Box::pin(self.stopped(stop));
            }
        };
        let elicited = self.elicit_inner(name, &request, Some(timeout));
        Box::pin(async move { Ok(elicited.await) })
    }

    /// Claims the key now; serialises the request now (a value borrowed by the caller need not
    /// outlive the call), and the machine stores it only when the elicitation is new ground.
    fn elicit_inner<'a>(
        &'a self,
        name: &str,
        request: &dyn ErasedSerialize,
        timeout: Option<Duration>,
    ) -> impl Future<Output = ElicitOutcome> + use<'a> {
        let key = self.with(|m| m.claim(name));
        let request = request.to_value();
        async move {
            let key = self.proceed(key).await;
            self.new_ground(&key).await;
            match self
                .act(|m, now| m.elicit(&key, request, timeout, now))
                .await
            {
                ElicitNext::Answered(response) => ElicitOutcome::Answered(parse_json(&response)),
                ElicitNext::TimedOut => ElicitOutcome::TimedOut,
            }
        }
    }

    /// Offers a standing, non-blocking input request under `key`: the task keeps running, a
    /// client may answer it at any time with `tasks/update`, and the answer cuts the next
    /// sleep short (once). Read the answer with [`check_input`](Self::check_input). Offering a
    /// key again (on replay, or later in the run) keeps the first request. `request` is written
    /// as for [`elicit`](Self::elicit): `{"mode": "form", "message": ..., "requestedSchema":
    /// {"type": "object", "properties": {...}, "required": [...]}}`.
    pub async fn offer(&self, key: &str, request: impl Serialize) -> Result<(), TaskError> {
        let request = request.to_value();
        self.new_ground(key).await;
        self.act(|m, now| m.offer(key, request, now)).await;
        Ok(())
    }

    /// A journaled, non-blocking read of the offer under `key`: the answer if one arrived and
    /// was not taken yet (taking it), `None` otherwise. Replays return what this step saw.
    pub fn check_input<'a>(
        &'a self,
        name: &str,
        key: &str,
    ) -> LocalBoxFuture<'a, Result<Option<Value>, TaskError>> {
        let step_key = self.with(|m| m.claim(name));
        let key = key.to_owned();
        Box::pin(async move {
            let step_key = self.proceed(step_key).await;
            self.new_ground(&step_key).await;
            let answer = match self.act(|m, _| m.check(&step_key)).await {
                CheckNext::Seen(answer) => answer,
                CheckNext::Read => {
                    let offer = match self.host.store.load_input(&self.task_id, &key) {
                        Ok(offer) => offer,
                        Err(error) => return self.store_failed(error).await,
                    };
                    self.act(|m, now| m.record_check(&step_key, &key, offer, now))
                        .await
                }
            };
            Ok(answer.as_deref().map(parse_json))
        })
    }

    /// Publishes a status message for pollers (`statusMessage` of `tasks/get`). Calls that an
    /// earlier run of the body already published are not published again while replaying.
    pub fn status<'a>(&'a self, message: impl Into<String>) -> LocalBoxFuture<'a, ()> {
        let ordinal = self.with(Activation::status_call);
        let message = message.into();
        Box::pin(async move {
            let ordinal = self.proceed(ordinal).await;
            self.act(|m, now| m.publish(ordinal, message, None, now))
                .await;
        })
    }

    /// Publishes a status message with a JSON meta object (at most 8 KiB), which replaces the
    /// previous one; a later [`status`](Self::status) keeps it. Pollers find the object in
    /// `tasks/get` under `_meta["io.durable-mcp-server/status"]`.
    pub fn status_with_meta<'a>(
        &'a self,
        message: impl Into<String>,
        meta: impl Serialize,
    ) -> LocalBoxFuture<'a, ()> {
        let ordinal = self.with(Activation::status_call);
        let message = message.into();
        let meta = meta.to_value();
        Box::pin(async move {
            let ordinal = self.proceed(ordinal).await;
            self.act(|m, now| m.publish(ordinal, message, Some(meta), now))
                .await;
        })
    }

    // ---- time, randomness and patches that replay ----

    /// The current time, the same on every replay: the first run reads the host's clock and
    /// records the reading in the journal, and replays return that reading.
    ///
    /// Read the time here, never with `SystemTime::now()` (or `Instant::now()`) in a body: a
    /// body that branches on a fresh clock reading can take another branch when it replays.
    /// Each call is its own record (`$now`, `$now#2`, ... in call order), kept with the step
    /// rows; recording costs no round trip to the store: the record goes out with the next
    /// write the body causes. Inside a step's closure, read the clock directly: the step's
    /// result is what is recorded.
    pub fn now(&self) -> Timestamp {
        let clock = self.now_on_host();
        self.with(|m| m.now(clock))
    }

    /// A random `u64`, the same on every replay.
    ///
    /// The task's first draw records a seed from the OS random source in the journal (under
    /// `$random`); every draw is the next number of the stream that seed fixes, counted in
    /// call order, so a replay draws the same numbers. Use this (and [`random_f64`],
    /// [`random_range`], [`uuid`]) instead of `rand::random()` or `getrandom` in a body. The
    /// stream is not cryptographic and the journal holds its seed: draw secrets (keys,
    /// tokens) inside a step from a cryptographic source instead.
    ///
    /// [`random_f64`]: Self::random_f64
    /// [`random_range`]: Self::random_range
    /// [`uuid`]: Self::uuid
    pub fn random_u64(&self) -> u64 {
        let now = self.now_on_host();
        self.with(|m| m.random(fresh_seed, now))
    }

    /// A random number in `[0, 1)`, the same on every replay (see
    /// [`random_u64`](Self::random_u64)).
    pub fn random_f64(&self) -> f64 {
        draws::unit_interval(self.random_u64())
    }

    /// A random number in `range`, the same on every replay (see
    /// [`random_u64`](Self::random_u64)).
    ///
    /// # Panics
    ///
    /// If `range` is empty.
    pub fn random_range(&self, range: std::ops::Range<u64>) -> u64 {
        assert!(
            range.start < range.end,
            "cx.random_range({range:?}): the range is empty"
        );
        draws::within(self.random_u64(), range)
    }

    /// A random (version 4) UUID, hyphenated in lower case, the same on every replay (see
    /// [`random_u64`](Self::random_u64)): an id for a record the task creates, stable across
    /// retries of the steps that use it.
    pub fn uuid(&self) -> String {
        let high = self.random_u64();
        let low = self.random_u64();
        draws::uuid(high, low)
    }

    /// A patch gate, for changing a body while tasks are in flight: `true` for a task that
    /// reaches this point on code that has the gate, `false` for one that went past it on
    /// older code. The answer is recorded (under `$patch:<id>`), so every replay agrees.
    ///
    /// ```ignore
    /// if cx.patched("tax-step") {
    ///     add_tax(&cx, &order).await?;   // new code: only tasks that reach here now
    /// } else {
    ///     legacy_total(&cx, &order).await?; // what tasks already past this point ran
    /// }
    /// ```
    ///
    /// A task went past the gate on older code when its journal holds a step, sleep or input
    /// that this run has not reached yet: the older run recorded it further on. Call it where
    /// the body runs one branch at a time (not inside a `join!` whose other branches are
    /// still recording). Once no task created before the patch is in flight, replace the
    /// gate by its new side and [`retire_patch`](Self::retire_patch). See "Changing a task's
    /// code" in `docs/deploying.md`.
    pub fn patched(&self, id: &str) -> bool {
        let now = self.now_on_host();
        self.with(|m| m.patched(id, now))
    }

    /// Marks the place of a retired patch gate whose new side is now the only code: a task
    /// that took (or would take) the old side fails here with a message that says so,
    /// instead of diverging further on. Returns that failure for the body to pass on with
    /// `?`; the task fails either way.
    pub fn retire_patch(&self, id: &str) -> Result<(), TaskError> {
        let now = self.now_on_host();
        match self.with(|m| m.retire_patch(id, now)) {
            Ok(()) => Ok(()),
            Err(Stop) => Err(TaskError::failed(format!(
                "the task took the old side of the retired patch {id:?}"
            ))),
        }
    }

    // ---- cleanup after a cancel ----

    /// Registers a compensation: if the task is cancelled from here on, `compensation` runs
    /// after the body stops, as a journaled step under `$cleanup:<name>`, before the task
    /// shows `cancelled`.
    ///
    /// Register one right after the step whose effect it undoes:
    ///
    /// ```ignore
    /// let booking = book_room(&cx, &trip).await?;
    /// let id = booking.id.clone();
    /// cx.on_cancel("release-room", move || async move { release_room(&id).await });
    /// ```
    ///
    /// When a `tasks/cancel` stops the body (at its next step, sleep or input, or at once if
    /// it is waiting), the compensations it registered run one after another, the last
    /// registered first. Each is a step like any other: recorded once done, never run again,
    /// retried with backoff under the task's retry policy (a panic is a failed attempt), and
    /// carried across restarts: the next activation replays the body up to the point where the
    /// cancel stopped it, which registers the same compensations, and runs those not done yet.
    /// One that fails for good is recorded as failed and the others still run. The task
    /// becomes `cancelled` when all have run, or when the task's
    /// [cleanup timeout](crate::TaskOptions::cleanup_timeout) (5 minutes unless set) is over,
    /// whichever comes first; its status message then says how many were left unrun.
    ///
    /// The closure is `'static`: it runs after the body's future is gone, so move what it
    /// needs into it. Like a step's, it reaches the outside world, not this context. A task
    /// that completes or fails runs none of its compensations.
    pub fn on_cancel<T, F, Fut>(&self, name: &str, compensation: F)
    where
        T: Serialize + 'static,
        F: FnOnce() -> Fut + 'static,
        Fut: Future<Output = Result<T, StepError>> + 'static,
    {
        let now = self.now_on_host();
        let key = match self.with(|m| m.register_cleanup(name, now)) {
            Ok(Some(key)) => Ok(key),
            // Registered after the cleanup began: it has nothing to undo.
            Ok(None) => return,
            Err(Stop) => Err(Stop),
        };
        let what = format!("the result of compensation {name:?}");
        let compensation: Compensation = Box::new(move || {
            Box::pin(async move {
                let value = compensation().await?;
                serde_json::to_value(value).map_err(|error| {
                    StepError::non_retryable(format!("{what} cannot be stored as JSON: {error}"))
                })
            })
        });
        self.compensations.borrow_mut().push((key, compensation));
    }

    /// Stops a body that returned although the task's cancellation was recorded before this
    /// run (see [`Activation::stop_for_recorded_cancel`]); `false` if it was not.
    pub(crate) fn stop_for_recorded_cancel(&self) -> bool {
        self.with(Activation::stop_for_recorded_cancel)
    }

    /// Whether a cancellation of this run has anything to clean up: compensations it
    /// registered, or children to cancel.
    pub(crate) fn has_cleanup(&self) -> bool {
        !self.compensations.borrow().is_empty() || self.has_children_to_cancel()
    }

    /// Cleans up once a cancellation stopped the body (whose future is gone): cancels the
    /// children it has not heard back from, then runs the compensations this run registered,
    /// the last first. Returns once all is done; parks when a compensation waits for a retry,
    /// the deadline passes, a child or the store cannot be reached (the machine says why).
    pub(crate) async fn clean_up(&self, timeout: Duration) {
        let registered = std::mem::take(&mut *self.compensations.borrow_mut());
        let now = self.now_on_host();
        if !self.with(|m| m.begin_cleanup(timeout, now)) {
            return;
        }
        // The cleanup's record is durable before any child hears of it: a child cancelled
        // by a cleanup that was then lost would deliver its outcome to a parent that
        // replays past its join instead of cleaning up.
        if self.flush().await.is_err() {
            return;
        }
        self.cancel_children().await;
        for (key, compensation) in registered.into_iter().rev() {
            // One that failed for good is recorded as failed; the others still run.
            let _ = self.run_step(key, None, None, compensation).await;
        }
    }

    /// Sends the writes the machine queued and no later write carried (records of values and
    /// registrations made after the body's last write), before an activation that waits ends.
    pub(crate) async fn flush_leftovers(&self) {
        let _ = self.flush().await;
    }

    // ---- the shell ----

    /// How the activation ended, once it has (the driver asks after every poll of the body).
    pub(crate) fn end(&self) -> Option<End> {
        self.with(|m| m.end())
    }

    fn with<T>(&self, act: impl FnOnce(&mut Activation) -> T) -> T {
        act(&mut self.machine.borrow_mut())
    }

    fn now_on_host(&self) -> Timestamp {
        self.host.clock.now()
    }

    fn limits(&self) -> Limits {
        self.with(|m| *m.limits())
    }

    /// Asks the machine, sends the writes it decided to the store, and returns the decision to
    /// the body; parks the body if the machine or the store stopped it.
    async fn act<T>(&self, decide: impl FnOnce(&mut Activation, Timestamp) -> Decision<T>) -> T {
        let now = self.now_on_host();
        let decided = self.with(|m| decide(m, now));
        let flushed = self.flush().await;
        match (decided, flushed) {
            (Ok(value), Ok(())) => value,
            _ => parked().await,
        }
    }

    /// A decision made earlier (a key claimed at the call): its value, or the body stops.
    async fn proceed<T>(&self, decided: Decision<T>) -> T {
        match decided {
            Ok(value) => value,
            Err(Stop) => parked().await,
        }
    }

    /// Parks the body for a reason the machine has recorded.
    async fn stopped<T>(&self, _: Stop) -> T {
        parked().await
    }

    /// Stops the body because the store failed; the claim's redelivery runs it again.
    async fn store_failed<T>(&self, error: StoreError) -> T {
        self.stopped(self.with(|m| m.store_failed(error.0))).await
    }

    async fn fail<T>(&self, error: EngineError) -> T {
        self.stopped(self.with(|m| m.fail(error))).await
    }

    /// Applies the machine's queued writes under the activation's lease, and lets the host's
    /// other work run after a batch of them.
    async fn flush(&self) -> Decision<()> {
        let writes = self.with(Activation::take_writes);
        if writes.is_empty() {
            return Ok(());
        }
        let guard = self.with(|m| m.guard());
        let applied = self.host.store.apply(&self.task_id, guard, &writes);
        self.with(|m| m.committed(applied.map_err(|error| error.0)))?;
        if self.pacer.wrote() {
            self.while_busy(self.host.timer.yield_now()).await;
            self.pacer.yielded(self.now_on_host());
        }
        Ok(())
    }

    /// Awaits `future`, something of the context's own (not the body's), counted as busy: the
    /// body goes on by itself once it is done.
    async fn while_busy<T>(&self, future: impl Future<Output = T>) -> T {
        struct Busy<'a>(&'a Cell<u32>);
        impl Drop for Busy<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get() - 1);
            }
        }
        self.busy.set(self.busy.get() + 1);
        let _busy = Busy(&self.busy);
        future.await
    }

    // ---- new ground against the journal ----

    /// Before the operation under `key` breaks new ground while keys an earlier run recorded
    /// are not reached yet: waits until the body has paused, when the machine judges whether
    /// another branch reached them (the operation goes on) or the code no longer reaches them
    /// (the task fails, and the operation never runs). So a step renamed or moved behind new
    /// work under a task in flight fails the task before the new code's side effect.
    async fn new_ground(&self, key: &str) {
        if !self.with(|m| m.defers_new_ground(key)) {
            return;
        }
        poll_fn(|waker| {
            if self.with(|m| m.ground_deferred()) {
                self.deferred.borrow_mut().push(waker.waker().clone());
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await
    }

    /// After a poll that left the body pending: judges deferred new ground (see
    /// [`Activation::judge_deferred_ground`]) and wakes what waited for the judgement.
    pub(crate) fn judge_deferred_ground(&self) {
        let busy = self.busy.get() > 0;
        if self.with(|m| m.judge_deferred_ground(busy)) {
            for waker in self.deferred.take() {
                waker.wake();
            }
        }
    }

    /// Fails the task if its body returned without reaching every key an earlier run
    /// recorded (see [`Activation::fail_unreached_journal`]); `false` if it reached them all.
    pub(crate) fn fail_unreached_journal(&self) -> bool {
        self.with(Activation::fail_unreached_journal)
    }

    /// Fails the task if its body waits while rows it did not reach ask for a wake-up (see
    /// [`Activation::fail_stranded_journal`]); `false` if none does.
    pub(crate) fn fail_stranded_journal(&self) -> bool {
        self.with(Activation::fail_stranded_journal)
    }

    async fn run_step<T, F, Fut>(
        &self,
        key: Decision<String>,
        retry: Option<RetryPolicy>,
        timeout: Option<Duration>,
        closure: F,
    ) -> Result<T, TaskError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, StepError>>,
    {
        let key = self.proceed(key).await;
        self.new_ground(&key).await;
        let attempt = match self.act(|m, now| m.step(&key, retry, timeout, now)).await {
            StepNext::Replay(json) => {
                return match serde_json::from_str(&json) {
                    Ok(value) => Ok(value),
                    Err(error) => {
                        let what = format!("the recorded result of step {key:?}");
                        self.fail(EngineError::not_serialisable(what, &error)).await
                    }
                };
            }
            StepNext::Failed(failure) => return Err(step_failed(&key, failure)),
            StepNext::Run(attempt) => attempt,
        };
        let running = RunningAttempt(self, attempt.id);
        // The steps before this one must be durable before the closure can reach the outside
        // world (a host's output gate holds only requests sent after a write was issued).
        if let Err(error) = self.host.store.flush() {
            return self.store_failed(error).await;
        }
        let span = tracing::info_span!(
            target: trace::TARGET, "step", step = %key, attempt = attempt.number
        );
        let closure = self.outside_task(&key, closure).instrument(span);
        let outcome = step::attempt(&*self.host.timer, closure, attempt.timeout).await;
        let (value, result) = match outcome {
            Ok(value) => match step::store_value(&self.limits(), &key, &value) {
                Ok(json) => (Some(value), AttemptResult::Value(json)),
                Err(error) => {
                    drop(running);
                    return self.fail(error).await;
                }
            },
            Err(error) => {
                let result = AttemptResult::Error {
                    message: error.message().to_owned(),
                    retryable: error.is_retryable(),
                    timed_out: error.is_timeout(),
                };
                (None, result)
            }
        };
        let id = running.answered();
        let end = self.act(|m, now| m.attempt_done(id, result, now)).await;
        match (end, value) {
            (StepEnd::Completed, Some(value)) => Ok(value),
            (StepEnd::Failed(failure), _) => Err(step_failed(&key, failure)),
            // A value is recorded only for an attempt that returned one.
            (StepEnd::Completed, None) => parked().await,
        }
    }

    /// Runs a step's closure outside the task: no context is current for `#[step]` fns called
    /// inside it, and a call on this context from inside it is refused as a nested step.
    async fn outside_task<Fut: Future>(
        &self,
        key: &str,
        closure: impl FnOnce() -> Fut,
    ) -> Fut::Output {
        let mut closure = pin!({
            let _inside = InsideClosure::enter(self, key);
            without_current(closure)
        });
        poll_fn(|waker| {
            let _inside = InsideClosure::enter(self, key);
            without_current(|| closure.as_mut().poll(waker))
        })
        .await
    }
}

/// 128 bits from the OS random source: the seed of a task's random draws.
fn fresh_seed() -> Result<u128, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| error.to_string())?;
    Ok(u128::from_le_bytes(bytes))
}

/// The body is parked for good: the activation ends and its future is dropped.
async fn parked<T>() -> T {
    std::future::pending().await
}

/// Tells the machine that an attempt's future was dropped before it finished, unless the
/// attempt is answered.
struct RunningAttempt<'a>(&'a TaskContext, AttemptId);

impl RunningAttempt<'_> {
    /// The attempt finished: its answer goes to the machine instead of the abandonment.
    fn answered(self) -> AttemptId {
        let id = self.1;
        std::mem::forget(self);
        id
    }
}

impl Drop for RunningAttempt<'_> {
    fn drop(&mut self) {
        let id = self.1;
        self.0.with(|m| m.attempt_abandoned(id));
    }
}

/// Marks a step's closure as running for as long as it lives (also through a panic).
struct InsideClosure<'a>(&'a TaskContext);

impl<'a> InsideClosure<'a> {
    fn enter(cx: &'a TaskContext, key: &str) -> Self {
        cx.with(|m| m.enter_closure(key));
        InsideClosure(cx)
    }
}

impl Drop for InsideClosure<'_> {
    fn drop(&mut self) {
        self.0.with(Activation::leave_closure);
    }
}

fn step_failed(key: &str, failure: StepFailure) -> TaskError {
    TaskError::StepFailed {
        step: key.to_owned(),
        kind: failure.kind,
        attempts: failure.attempts,
        message: failure.message,
    }
}

/// A step about to run; set options, then `.await` it (or hand it to a combinator such as
/// `try_join_all`: it is a future). Its journal key was claimed when [`TaskContext::step`] was
/// called.
#[must_use = "a step does nothing until it is awaited"]
pub struct Step<'a, F, T> {
    cx: &'a TaskContext,
    key: Decision<String>,
    closure: Option<F>,
    retry: Option<RetryPolicy>,
    timeout: Option<Duration>,
    running: Option<LocalBoxFuture<'a, Result<T, TaskError>>>,
}

impl<F, T> std::fmt::Debug for Step<'_, F, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("key", &self.key)
            .field("retry", &self.retry)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<F, T> Step<'_, F, T> {
    /// Retries this step under `policy` instead of the task's policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Limits each attempt to `timeout` instead of the task's step timeout; an attempt that
    /// takes longer fails (and is retried under the policy). The closure's future is dropped.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

// The closure is moved out on the first poll and never pinned in place.
impl<F, T> Unpin for Step<'_, F, T> {}

impl<'a, T, F, Fut> Future for Step<'a, F, T>
where
    T: Serialize + DeserializeOwned + 'a,
    F: FnOnce() -> Fut + 'a,
    Fut: Future<Output = Result<T, StepError>> + 'a,
{
    type Output = Result<T, TaskError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        waker: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let step = self.get_mut();
        if let Some(closure) = step.closure.take() {
            let key = std::mem::replace(&mut step.key, Err(Stop));
            let running = step.cx.run_step(key, step.retry, step.timeout, closure);
            step.running = Some(Box::pin(running));
        }
        match step.running.as_mut() {
            Some(running) => running.as_mut().poll(waker),
            // Polled again after it finished.
            None => std::task::Poll::Pending,
        }
    }
}

fn parse_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// Serialises a `&dyn` value without making the callers generic.
trait ErasedSerialize {
    fn to_value(&self) -> Result<Value, serde_json::Error>;
}

impl<T: Serialize> ErasedSerialize for T {
    fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}
