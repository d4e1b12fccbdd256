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
use super::ports::LocalBoxFuture;
use super::step::{self, StepFailure};
use crate::core::limits::to_stored_json;
use crate::core::{
    Applied, EngineError, Guard, InputRow, Limits, RetryPolicy, StepKind, StepRow, StepStatus,
    TaskState, Timestamp, Write, parse_duration,
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
    writes_since_yield: Cell<u32>,
    suspension: RefCell<Option<Suspension>>,
}

/// How many journal writes a body makes before it yields to the host's event loop once.
const WRITES_PER_YIELD: u32 = 64;

pub(crate) struct ContextParts {
    pub journal: TaskState,
    pub host: Host,
    pub retry: RetryPolicy,
    pub step_timeout: Duration,
    pub limits: Limits,
}

impl TaskContext {
    pub(crate) fn new(parts: ContextParts) -> Self {
        let task = &parts.journal.task;
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
            writes_since_yield: Cell::new(0),
            suspension: RefCell::new(None),
        }
    }

    /// The id of this task.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// A key for external deduplication of `step`'s side effect: `"<task id>:<step>"`, the same
    /// on every attempt and replay.
    pub fn idempotency_key(&self, step: &str) -> String {
        format!("{}:{step}", self.task_id)
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
        let recorded = self.recorded_step(&key, StepKind::Sleep).await;
        let now = self.now();
        let cut = self.journal.borrow().task.cut_next_sleep;
        let pending = match recorded {
            Some(row) if row.status != StepStatus::Pending => return Ok(()),
            Some(row) => row,
            None => {
                self.observe_cancel().await;
                let row = StepRow {
                    key,
                    kind: StepKind::Sleep,
                    status: StepStatus::Pending,
                    result: None,
                    attempt: 0,
                    next_attempt_at: None,
                    wake_at: Some(wake_at),
                    last_error: None,
                    seq: self.take_seq(),
                    created_at: now,
                    completed_at: None,
                };
                if wake_at > now && !cut {
                    self.write(vec![Write::PutStep(row)]).await;
                    return self.stop(Suspension::Wait).await;
                }
                row
            }
        };
        let due = pending.wake_at.is_none_or(|at| at <= now);
        if !due && !cut {
            return self.stop(Suspension::Wait).await;
        }
        let mut done = pending;
        done.status = StepStatus::Completed;
        done.completed_at = Some(now);
        let mut writes = vec![Write::PutStep(done)];
        if cut {
            // An offer's answer arrived to cut a sleep: this one ends, the flag is spent.
            writes.push(Write::ClearSleepCut);
            self.journal.borrow_mut().task.cut_next_sleep = false;
        }
        self.write(writes).await;
        Ok(())
    }

    /// Asks the client for input and waits, durably, for the answer: the task shows as
    /// `input_required` with `request` under the step's key until a `tasks/update` answers it.
    /// Returns the client's response object.
    pub async fn elicit(&self, name: &str, request: impl Serialize) -> Result<Value, TaskError> {
        match self.elicit_inner(name, &request, None).await {
            ElicitOutcome::Answered(response) => Ok(response),
            // Only a deadline times an elicitation out, and this one has none.
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
        match self.recorded_input(&key, StepKind::Elicit).await {
            Some(row) if row.timed_out => return ElicitOutcome::TimedOut,
            Some(row) if row.answered => {
                let response = row
                    .response
                    .as_deref()
                    .map(parse_json)
                    .unwrap_or(Value::Null);
                return ElicitOutcome::Answered(response);
            }
            Some(_) => return self.stop(Suspension::Wait).await,
            None => {}
        }
        self.observe_cancel().await;
        let what = || format!("the request of elicitation {key:?}");
        let request = match request.to_value() {
            Ok(value) => value,
            Err(error) => {
                return self
                    .fail(EngineError::not_serialisable(what(), &error))
                    .await;
            }
        };
        let request = match to_stored_json(&self.limits, what, &request) {
            Ok(json) => json,
            Err(error) => return self.fail(error).await,
        };
        let now = self.now();
        let row = InputRow {
            key,
            request,
            response: None,
            answered: false,
            answered_at: None,
            timeout_at: timeout.map(|t| now.saturating_add(t)),
            timed_out: false,
            blocking: true,
            consumed: false,
            seq: self.take_seq(),
            created_at: now,
        };
        self.write(vec![Write::PutInput(row), Write::AwaitInput { at: now }])
            .await;
        self.stop(Suspension::Wait).await
    }

    /// Offers a standing, non-blocking input request under `key`: the task keeps running, a
    /// client may answer it at any time with `tasks/update`, and the answer cuts a pending
    /// sleep short. Read the answer with [`check_input`](Self::check_input). Offering a key
    /// again (on replay, or later in the run) keeps the first request.
    pub async fn offer(&self, key: &str, request: impl Serialize) -> Result<(), TaskError> {
        if let Err(error) = validate_name(key) {
            return self.fail(error).await;
        }
        if self.recorded_input(key, StepKind::Offer).await.is_some() {
            return Ok(());
        }
        self.observe_cancel().await;
        let what = || format!("the request of offer {key:?}");
        let request = match to_stored_json(&self.limits, what, &request) {
            Ok(json) => json,
            Err(error) => return self.fail(error).await,
        };
        let now = self.now();
        let row = InputRow {
            key: key.to_owned(),
            request,
            response: None,
            answered: false,
            answered_at: None,
            timeout_at: None,
            timed_out: false,
            blocking: false,
            consumed: false,
            seq: self.take_seq(),
            created_at: now,
        };
        self.journal
            .borrow_mut()
            .inputs
            .insert(row.key.clone(), row.clone());
        self.write(vec![Write::PutInput(row)]).await;
        Ok(())
    }

    /// A journaled, non-blocking read of the offer under `key`: the answer if one arrived and
    /// was not taken yet (taking it), `None` otherwise. Replays return what this step saw.
    pub async fn check_input(&self, name: &str, key: &str) -> Result<Option<Value>, TaskError> {
        let step_key = self.claim(name).await;
        if let Some(row) = self.recorded_step(&step_key, StepKind::Check).await {
            let value = row.result.as_deref().map(parse_json).unwrap_or(Value::Null);
            return Ok(Some(value).filter(|v| !v.is_null()));
        }
        self.observe_cancel().await;
        let offer = match self.host.store.load_input(&self.task_id, key) {
            Ok(offer) => offer,
            Err(error) => return self.stop(Suspension::StoreUnavailable(error.0)).await,
        };
        let no_offer = |reason| EngineError::NoOffer {
            key: key.to_owned(),
            reason,
        };
        let mut writes = Vec::with_capacity(2);
        let answer = match offer {
            None => return self.fail(no_offer("no offer is registered under it")).await,
            Some(row) if row.blocking => {
                return self
                    .fail(no_offer("it is an elicitation, which cx.elicit reads"))
                    .await;
            }
            Some(mut row) if row.answered && !row.consumed => {
                row.consumed = true;
                let answer = row.response.clone();
                writes.push(Write::PutInput(row));
                answer
            }
            Some(_) => None,
        };
        let now = self.now();
        writes.push(Write::PutStep(StepRow {
            key: step_key,
            kind: StepKind::Check,
            status: StepStatus::Completed,
            result: Some(answer.clone().unwrap_or_else(|| "null".to_owned())),
            attempt: 0,
            next_attempt_at: None,
            wake_at: None,
            last_error: None,
            seq: self.take_seq(),
            created_at: now,
            completed_at: Some(now),
        }));
        self.write(writes).await;
        Ok(answer.as_deref().map(parse_json))
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
        if ordinal <= self.journal.borrow().task.status_published {
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
        if *count == 1 {
            name.to_owned()
        } else {
            format!("{name}#{count}")
        }
    }

    /// The recorded step row under `key`, after checking it was recorded as `kind`.
    async fn recorded_step(&self, key: &str, kind: StepKind) -> Option<StepRow> {
        self.check_kind(key, kind).await;
        self.journal.borrow().steps.get(key).cloned()
    }

    /// The recorded input row under `key`, after checking it was recorded as `kind`.
    async fn recorded_input(&self, key: &str, kind: StepKind) -> Option<InputRow> {
        self.check_kind(key, kind).await;
        self.journal.borrow().inputs.get(key).cloned()
    }

    async fn check_kind(&self, key: &str, requested: StepKind) {
        let recorded = self.journal.borrow().recorded_kind(key);
        if let Some(recorded) = recorded.filter(|&recorded| recorded != requested) {
            let key = key.to_owned();
            let error = EngineError::Nondeterminism {
                key,
                recorded,
                requested,
            };
            self.fail::<()>(error).await;
        }
    }

    /// A step boundary on new ground: stops the run if a cancellation is waiting.
    async fn observe_cancel(&self) {
        if self.cancel_requested.get() {
            self.stop::<()>(Suspension::Cancelled).await;
        }
    }

    /// Applies writes under the activation's lease; stops the run if the lease is lost.
    async fn write(&self, writes: Vec<Write>) {
        let guard = Guard {
            version: None,
            generation: Some(self.generation),
        };
        match self.host.store.apply(&self.task_id, guard, &writes) {
            Ok(Applied::Done { cancel_requested }) => self.cancel_requested.set(cancel_requested),
            Ok(Applied::Stale) => self.stop(Suspension::Stale).await,
            Err(error) => self.stop(Suspension::StoreUnavailable(error.0)).await,
        }
        let written = self.writes_since_yield.get() + 1;
        if written >= WRITES_PER_YIELD {
            self.writes_since_yield.set(0);
            step::yield_now().await;
        } else {
            self.writes_since_yield.set(written);
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
        let recorded = self.recorded_step(&key, StepKind::Do).await;
        let attempt = match &recorded {
            None => 1,
            Some(row) => match row.status {
                StepStatus::Completed => {
                    let text = row.result.as_deref().unwrap_or("null");
                    return match serde_json::from_str(text) {
                        Ok(value) => Ok(value),
                        Err(error) => {
                            let what = format!("the recorded result of step {key:?}");
                            self.fail(EngineError::not_serialisable(what, &error)).await
                        }
                    };
                }
                StepStatus::Failed => return Err(StepFailure::parse(&key, row).into_error(&key)),
                StepStatus::Pending if row.next_attempt_at.is_some_and(|at| at > self.now()) => {
                    return self.stop(Suspension::Wait).await;
                }
                StepStatus::Pending => row.attempt + 1,
            },
        };
        self.observe_cancel().await;
        let timeout = timeout.unwrap_or(self.step_timeout);
        let outcome = step::attempt(&*self.host.timer, closure(), timeout).await;
        let now = self.now();
        let seq = recorded
            .as_ref()
            .map_or_else(|| self.take_seq(), |row| row.seq);
        let created_at = recorded.as_ref().map_or(now, |row| row.created_at);
        let mut row = StepRow {
            key,
            kind: StepKind::Do,
            status: StepStatus::Completed,
            result: None,
            attempt,
            next_attempt_at: None,
            wake_at: None,
            last_error: None,
            seq,
            created_at,
            completed_at: Some(now),
        };
        match outcome {
            Ok(value) => {
                let json = match step::store_value(&self.limits, &row.key, &value) {
                    Ok(json) => json,
                    Err(error) => return self.fail(error).await,
                };
                row.result = Some(json);
                self.write(vec![Write::PutStep(row)]).await;
                Ok(value)
            }
            Err(error) if error.is_retryable() && policy.allows_retry_after(attempt) => {
                let spread = crate::core::retry::jitter_fraction(&self.task_id, &row.key, attempt);
                row.status = StepStatus::Pending;
                row.completed_at = None;
                row.next_attempt_at = Some(now.saturating_add(policy.delay_after(attempt, spread)));
                row.last_error = Some(error.message().to_owned());
                self.write(vec![Write::PutStep(row)]).await;
                self.stop(Suspension::Wait).await
            }
            Err(error) => {
                let failure = StepFailure {
                    attempts: attempt,
                    message: error.message().to_owned(),
                };
                row.status = StepStatus::Failed;
                row.result = Some(failure.to_json());
                row.last_error = Some(failure.message.clone());
                let key = row.key.clone();
                self.write(vec![Write::PutStep(row)]).await;
                Err(failure.into_error(&key))
            }
        }
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
