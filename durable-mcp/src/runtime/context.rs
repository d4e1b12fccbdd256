//! `TaskContext`: the API a task body runs against.
//!
//! Every operation first asks the journal loaded at the start of the activation. A hit returns
//! what was recorded, without running anything; a miss runs (or records) the operation and
//! writes its outcome at once, guarded by the activation's lease. When the body must wait (a
//! sleep, a retry backoff, an unanswered elicitation), is cancelled, or hits an engine failure,
//! the operation records why and never completes: the driver sees the request, settles the task
//! and drops the body's future. No user code runs past such a point.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::{ElicitOutcome, StepError, TaskError};
use super::host::Host;
use super::pacer::Pacer;
use super::ports::LocalBoxFuture;
use super::step;
use crate::core::limits::to_stored_json;
use crate::core::replay::{
    self, AfterAttempt, AttemptResult, CheckReplay, Cursor, ElicitReplay, OfferReplay, SleepReplay,
    StepFailure, StepReplay,
};
use crate::core::{
    Applied, EngineError, Guard, Limits, RetryPolicy, TaskState, Timestamp, Write, parse_duration,
};

/// Why an activation stops before its body returns.
#[derive(Debug)]
pub(crate) enum Suspension {
    /// Waiting for time or input; the schedule holds the next wake.
    Wait,
    /// A cancellation was observed at a step boundary.
    Cancelled,
    /// A newer activation or a terminal status owns the task; this one must not write.
    Stale,
    /// The store failed; the redelivery anchor runs the body again later.
    StoreUnavailable(String),
    /// An engine failure: the task fails.
    Fail(EngineError),
    /// The activation ran past the host's hand-off time; another runs the body on at once.
    HandOff,
}

/// A duration given to [`TaskContext::sleep`]: a [`Duration`] or a string such as `"5s"`.
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
/// step results, never on clocks or randomness read outside a step).
pub struct TaskContext {
    task_id: String,
    generation: u64,
    journal: RefCell<TaskState>,
    host: Host,
    retry: RetryPolicy,
    step_timeout: Duration,
    limits: Limits,
    cancel_requested: Cell<bool>,
    occurrences: RefCell<HashMap<String, u32>>,
    status_calls: Cell<u32>,
    next_seq: Cell<u64>,
    pacer: Pacer,
    hand_off_at: Option<Timestamp>,
    suspension: RefCell<Option<Suspension>>,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.task_id)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

pub(crate) struct ContextParts {
    pub journal: TaskState,
    pub host: Host,
    pub retry: RetryPolicy,
    pub step_timeout: Duration,
    pub limits: Limits,
    /// When a new step attempt is no longer started in this activation.
    pub hand_off_at: Option<Timestamp>,
}

impl TaskContext {
    pub(crate) fn new(parts: ContextParts) -> Self {
        let task = &parts.journal.task;
        let pacer = Pacer::new(parts.host.clock.now());
        TaskContext {
            task_id: task.task_id.clone(),
            generation: task.generation,
            cancel_requested: Cell::new(task.cancel_requested),
            next_seq: Cell::new(parts.journal.next_seq()),
            journal: RefCell::new(parts.journal),
            host: parts.host,
            retry: parts.retry,
            step_timeout: parts.step_timeout,
            limits: parts.limits,
            occurrences: RefCell::default(),
            status_calls: Cell::new(0),
            pacer,
            hand_off_at: parts.hand_off_at,
            suspension: RefCell::new(None),
        }
    }

    /// The id of this task.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// A key for external deduplication of the side effect of the next `step` this run takes:
    /// `"<task id>:<journal key>"`, the same on every attempt and replay. Call it just before
    /// the step; in a loop each occurrence gets its own (`<id>:send`, `<id>:send#2`, ...).
    pub fn idempotency_key(&self, step: &str) -> String {
        let taken = self.occurrences.borrow().get(step).copied().unwrap_or(0);
        format!("{}:{}", self.task_id, occurrence_key(step, taken + 1))
    }

    /// A journaled step: runs `closure` once and records its value; on replay returns the
    /// recorded value without running it.
    ///
    /// The step is keyed by `name` plus its occurrence in the run (`name`, `name#2`, ...), so a
    /// step in a loop needs no hand-made suffix. A failed attempt is retried after a backoff
    /// under the task's retry policy (or [`Step::retry`]); the task sleeps durably in between.
    /// A panic in the closure is a failed attempt. Once no attempt is left, or the closure
    /// returned [`StepError::non_retryable`], the step fails for good and this returns
    /// [`TaskError::StepFailed`] (now and on every replay).
    pub fn step<'a, T, F, Fut>(&'a self, name: &str, closure: F) -> Step<'a, F>
    where
        T: Serialize + DeserializeOwned + 'a,
        F: FnOnce() -> Fut + 'a,
        Fut: Future<Output = Result<T, StepError>> + 'a,
    {
        Step {
            cx: self,
            name: name.to_owned(),
            closure,
            retry: None,
            timeout: None,
        }
    }

    /// Sleeps durably for `duration` (a [`Duration`] or a string such as `"5s"`); the task is
    /// unloaded meanwhile and resumes when the time comes, across restarts.
    pub async fn sleep(&self, name: &str, duration: impl IntoDelay) -> Result<(), TaskError> {
        let key = self.claim(name).await;
        let duration = match duration.into_delay() {
            Ok(duration) => duration,
            Err(source) => {
                let what = format!("the duration of sleep {key:?}");
                return self
                    .fail(EngineError::InvalidDuration { what, source })
                    .await;
            }
        };
        let wake_at = self.now().saturating_add(duration);
        self.sleep_until_key(key, wake_at).await
    }

    /// Sleeps durably until `when` (milliseconds since the epoch).
    pub async fn sleep_until(&self, name: &str, when: Timestamp) -> Result<(), TaskError> {
        let key = self.claim(name).await;
        self.sleep_until_key(key, when).await
    }

    async fn sleep_until_key(&self, key: String, wake_at: Timestamp) -> Result<(), TaskError> {
        // Sequence numbers only order rows; one left unused leaves a harmless gap.
        let seq = self.take_seq();
        let decision = self
            .decide(|c| replay::replay_sleep(c, &key, wake_at, seq))
            .await;
        match decision {
            SleepReplay::Done(writes) => {
                self.write(writes).await;
                Ok(())
            }
            SleepReplay::Wait(writes) => {
                self.write(writes).await;
                self.stop(Suspension::Wait).await
            }
            SleepReplay::Cancelled => self.stop(Suspension::Cancelled).await,
        }
    }

    /// Asks the client for input and waits, durably, for the answer: the task shows as
    /// `input_required` with `request` under the step's key until a `tasks/update` answers it.
    /// Returns the client's response object (an elicitation result:
    /// `{"action": "accept" | "decline" | "cancel", "content": {...}}`).
    ///
    /// `request` is what `elicitation/create` takes as params, e.g.
    /// `{"mode": "form", "message": "Delete a.txt?", "requestedSchema": {...}}`; `tasks/get`
    /// shows it as `{"method": "elicitation/create", "params": request}`.
    pub async fn elicit(&self, name: &str, request: impl Serialize) -> Result<Value, TaskError> {
        match self.elicit_inner(name, &request, None).await {
            ElicitOutcome::Answered(response) => Ok(response),
            // Only a deadline times an elicitation out; this key was recorded with one, so the
            // body changed between runs.
            ElicitOutcome::TimedOut => {
                Err(TaskError::failed(format!("elicitation {name:?} timed out")))
            }
        }
    }

    /// Like [`elicit`](Self::elicit), but gives up after `timeout` (counted from the first time
    /// the request was recorded): returns [`ElicitOutcome::TimedOut`] then, and ignores a later
    /// answer.
    pub async fn elicit_with_timeout(
        &self,
        name: &str,
        request: impl Serialize,
        timeout: impl IntoDelay,
    ) -> Result<ElicitOutcome, TaskError> {
        let timeout = match timeout.into_delay() {
            Ok(timeout) => timeout,
            Err(source) => {
                let what = format!("the timeout of elicitation {name:?}");
                return self
                    .fail(EngineError::InvalidDuration { what, source })
                    .await;
            }
        };
        Ok(self.elicit_inner(name, &request, Some(timeout)).await)
    }

    async fn elicit_inner(
        &self,
        name: &str,
        request: &dyn ErasedSerialize,
        timeout: Option<Duration>,
    ) -> ElicitOutcome {
        let key = self.claim(name).await;
        match self.decide(|c| replay::replay_elicit(c, &key)).await {
            ElicitReplay::Answered(response) => ElicitOutcome::Answered(parse_json(&response)),
            ElicitReplay::TimedOut => ElicitOutcome::TimedOut,
            ElicitReplay::Wait => self.stop(Suspension::Wait).await,
            ElicitReplay::Cancelled => self.stop(Suspension::Cancelled).await,
            ElicitReplay::Ask => {
                let what = format!("the request of elicitation {key:?}");
                let request = self.stored_json(what, request).await;
                let timeout_at = timeout.map(|t| self.now().saturating_add(t));
                let seq = self.take_seq();
                let writes =
                    self.with_cursor(|c| replay::elicit_writes(c, &key, request, timeout_at, seq));
                self.write(writes).await;
                self.stop(Suspension::Wait).await
            }
        }
    }

    /// Offers a standing, non-blocking input request under `key`: the task keeps running, a
    /// client may answer it at any time with `tasks/update`, and the answer cuts a pending
    /// sleep short. Read the answer with [`check_input`](Self::check_input). Offering a key
    /// again (on replay, or later in the run) keeps the first request.
    pub async fn offer(&self, key: &str, request: impl Serialize) -> Result<(), TaskError> {
        if let Err(error) = validate_name(key) {
            return self.fail(error).await;
        }
        match self.decide(|c| replay::replay_offer(c, key)).await {
            OfferReplay::Offered => Ok(()),
            OfferReplay::Cancelled => self.stop(Suspension::Cancelled).await,
            OfferReplay::Offer => {
                let request = self.stored_json(format!("the request of offer {key:?}"), &request);
                let request = request.await;
                let seq = self.take_seq();
                let write = self.with_cursor(|c| replay::offer_write(c, key, request, seq));
                if let Write::PutInput(row) = &write {
                    // Later offers of the key in this run must see it.
                    let mut journal = self.journal.borrow_mut();
                    journal.inputs.insert(row.key.clone(), row.clone());
                }
                self.write(vec![write]).await;
                Ok(())
            }
        }
    }

    /// A journaled, non-blocking read of the offer under `key`: the answer if one arrived and
    /// was not taken yet (taking it), `None` otherwise. Replays return what this step saw.
    pub async fn check_input(&self, name: &str, key: &str) -> Result<Option<Value>, TaskError> {
        let step_key = self.claim(name).await;
        match self.decide(|c| replay::replay_check(c, &step_key)).await {
            CheckReplay::Seen(answer) => Ok(answer.as_deref().map(parse_json)),
            CheckReplay::Cancelled => self.stop(Suspension::Cancelled).await,
            CheckReplay::Read => {
                let offer = match self.host.store.load_input(&self.task_id, key) {
                    Ok(offer) => offer,
                    Err(error) => return self.stop(Suspension::StoreUnavailable(error.0)).await,
                };
                let seq = self.take_seq();
                let decided =
                    self.with_cursor(|c| replay::check_writes(c, &step_key, key, offer, seq));
                let (answer, writes) = match decided {
                    Ok(decided) => decided,
                    Err(error) => return self.fail(error).await,
                };
                self.write(writes).await;
                Ok(answer.as_deref().map(parse_json))
            }
        }
    }

    /// Publishes a status message for pollers (`statusMessage`). Calls that an earlier run of
    /// the body already published are not published again while replaying.
    pub async fn status(&self, message: impl Into<String>) {
        self.publish(message.into(), None).await;
    }

    /// Publishes a status message with a JSON meta object (at most 8 KiB), which replaces the
    /// previous one.
    pub async fn status_with_meta(&self, message: impl Into<String>, meta: impl Serialize) {
        let meta = match serde_json::to_value(&meta) {
            Ok(Value::Object(map)) => Value::Object(map),
            Ok(other) => {
                let reason = format!("must be a JSON object, got {other}");
                return self.fail(EngineError::InvalidStatusMeta { reason }).await;
            }
            Err(error) => {
                let reason = format!("cannot be serialised: {error}");
                return self.fail(EngineError::InvalidStatusMeta { reason }).await;
            }
        };
        let json = meta.to_string();
        if json.len() > self.limits.max_status_meta_bytes {
            let reason = format!(
                "is {} bytes of JSON, more than the limit of {} bytes",
                json.len(),
                self.limits.max_status_meta_bytes
            );
            return self.fail(EngineError::InvalidStatusMeta { reason }).await;
        }
        self.publish(message.into(), Some(json)).await;
    }

    async fn publish(&self, message: String, meta: Option<String>) {
        let ordinal = self.status_calls.get() + 1;
        self.status_calls.set(ordinal);
        if !self.with_cursor(|c| replay::publishes_status(c, ordinal)) {
            return;
        }
        let at = self.now();
        let write = Write::PublishStatus {
            message,
            meta,
            published: ordinal,
            at,
        };
        self.write(vec![write]).await;
    }

    // ---- shared machinery ----

    pub(crate) fn take_suspension(&self) -> Option<Suspension> {
        self.suspension.borrow_mut().take()
    }

    fn now(&self) -> Timestamp {
        self.host.clock.now()
    }

    fn take_seq(&self) -> u64 {
        let seq = self.next_seq.get();
        self.next_seq.set(seq + 1);
        seq
    }

    /// Records why the run stops and never completes. The first reason stands.
    pub(crate) async fn stop<T>(&self, why: Suspension) -> T {
        {
            let mut slot = self.suspension.borrow_mut();
            if slot.is_none() {
                *slot = Some(why);
            }
        }
        std::future::pending().await
    }

    async fn fail<T>(&self, error: EngineError) -> T {
        self.stop(Suspension::Fail(error)).await
    }

    /// The journal key of the next occurrence of `name` in this run.
    async fn claim(&self, name: &str) -> String {
        if let Err(error) = validate_name(name) {
            return self.fail(error).await;
        }
        let mut occurrences = self.occurrences.borrow_mut();
        let count = occurrences.entry(name.to_owned()).or_insert(0);
        *count += 1;
        occurrence_key(name, *count)
    }

    /// A replay decision on the journal as it stands now; an engine error stops the run.
    async fn decide<T>(&self, decide: impl FnOnce(&Cursor<'_>) -> Result<T, EngineError>) -> T {
        match self.with_cursor(decide) {
            Ok(decision) => decision,
            Err(error) => self.fail(error).await,
        }
    }

    fn with_cursor<T>(&self, read: impl FnOnce(&Cursor<'_>) -> T) -> T {
        let journal = self.journal.borrow();
        read(&Cursor {
            journal: &journal,
            now: self.now(),
            cancel_requested: self.cancel_requested.get(),
        })
    }

    /// Serialises a value to be stored, within the value limit; stops the run otherwise.
    async fn stored_json(&self, what: String, value: &dyn ErasedSerialize) -> String {
        let stored = value
            .to_value()
            .map_err(|error| EngineError::not_serialisable(what.clone(), &error))
            .and_then(|value| to_stored_json(&self.limits, || what.clone(), &value));
        match stored {
            Ok(json) => json,
            Err(error) => self.fail(error).await,
        }
    }

    /// Applies writes under the activation's lease; stops the run if the lease is lost.
    async fn write(&self, writes: Vec<Write>) {
        if writes.is_empty() {
            return;
        }
        let guard = Guard {
            version: None,
            generation: Some(self.generation),
        };
        match self.host.store.apply(&self.task_id, guard, &writes) {
            Ok(Applied::Done { cancel_requested }) => self.cancel_requested.set(cancel_requested),
            Ok(Applied::Stale) => self.stop(Suspension::Stale).await,
            Err(error) => self.stop(Suspension::StoreUnavailable(error.0)).await,
        }
        if self.pacer.wrote() {
            self.host.timer.yield_now().await;
            self.pacer.yielded(self.now());
        }
    }

    async fn run_step<T, F, Fut>(
        &self,
        name: String,
        retry: Option<RetryPolicy>,
        timeout: Option<Duration>,
        closure: F,
    ) -> Result<T, TaskError>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, StepError>>,
    {
        let key = self.claim(&name).await;
        let policy = retry.unwrap_or(self.retry);
        if let Err(error) = policy.validate() {
            let what = format!("step {key:?}");
            let reason = error.0.to_owned();
            return self.fail(EngineError::InvalidPolicy { what, reason }).await;
        }
        let attempt = match self.decide(|c| replay::replay_step(c, &key)).await {
            StepReplay::Value(json) => {
                return match serde_json::from_str(&json) {
                    Ok(value) => Ok(value),
                    Err(error) => {
                        let what = format!("the recorded result of step {key:?}");
                        self.fail(EngineError::not_serialisable(what, &error)).await
                    }
                };
            }
            StepReplay::Failed(failure) => return Err(step_failed(&key, failure)),
            StepReplay::Wait => return self.stop(Suspension::Wait).await,
            StepReplay::Cancelled => return self.stop(Suspension::Cancelled).await,
            StepReplay::Run { attempt } => attempt,
        };
        if self.hand_off_at.is_some_and(|at| self.now() >= at) {
            // Recorded steps stay; the next activation replays them and starts this one.
            return self.stop(Suspension::HandOff).await;
        }
        let timeout = timeout.unwrap_or(self.step_timeout);
        let outcome = step::attempt(&*self.host.timer, closure(), timeout).await;
        let (value, result) = match outcome {
            Ok(value) => match step::store_value(&self.limits, &key, &value) {
                Ok(json) => (Some(value), AttemptResult::Value(json)),
                Err(error) => return self.fail(error).await,
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
        let seq = self.take_seq();
        let (row, after) =
            self.with_cursor(|c| replay::record_attempt(c, &key, attempt, result, &policy, seq));
        self.write(vec![Write::PutStep(row)]).await;
        match (after, value) {
            (AfterAttempt::Completed, Some(value)) => Ok(value),
            (AfterAttempt::Failed(failure), _) => Err(step_failed(&key, failure)),
            _ => self.stop(Suspension::Wait).await,
        }
    }
}

/// The journal key of occurrence `count` (from 1) of `name` in a run: `name`, `name#2`, ...
fn occurrence_key(name: &str, count: u32) -> String {
    if count == 1 {
        name.to_owned()
    } else {
        format!("{name}#{count}")
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

/// A step about to run; set options, then `.await` it.
#[must_use = "a step does nothing until it is awaited"]
pub struct Step<'a, F> {
    cx: &'a TaskContext,
    name: String,
    closure: F,
    retry: Option<RetryPolicy>,
    timeout: Option<Duration>,
}

impl<F> std::fmt::Debug for Step<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("name", &self.name)
            .field("retry", &self.retry)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<F> Step<'_, F> {
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

impl<'a, T, F, Fut> IntoFuture for Step<'a, F>
where
    T: Serialize + DeserializeOwned + 'a,
    F: FnOnce() -> Fut + 'a,
    Fut: Future<Output = Result<T, StepError>> + 'a,
{
    type Output = Result<T, TaskError>;
    type IntoFuture = LocalBoxFuture<'a, Result<T, TaskError>>;

    fn into_future(self) -> Self::IntoFuture {
        let Step {
            cx,
            name,
            closure,
            retry,
            timeout,
        } = self;
        Box::pin(cx.run_step(name, retry, timeout, closure))
    }
}

fn validate_name(name: &str) -> Result<(), EngineError> {
    let invalid = |reason| EngineError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("it is empty"));
    }
    if name.contains('#') {
        return Err(invalid("it contains '#'"));
    }
    Ok(())
}

fn parse_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// Serialises a `&dyn` request without making `elicit_inner` generic.
trait ErasedSerialize {
    fn to_value(&self) -> Result<Value, serde_json::Error>;
}

impl<T: Serialize> ErasedSerialize for T {
    fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}
