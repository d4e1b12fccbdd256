//! Journaled steps from a body: [`TaskContext::step`] and the [`Step`] future it returns, and
//! how one attempt runs outside the task.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::Instrument;

use super::{TaskContext, parked};
use crate::core::activation::{
    Activation, AttemptId, AttemptResult, Decision, NameUse, StepEnd, StepNext, Stop,
};
use crate::core::step_failure::StepFailure;
use crate::core::trace;
use crate::core::{EngineError, RetryPolicy};
use crate::runtime::current::without_current;
use crate::runtime::error::{StepError, TaskError};
use crate::runtime::ports::LocalBoxFuture;
use crate::runtime::step;

impl TaskContext {
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
        self.claimed_step(self.claim(name, NameUse::Step), closure)
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

    pub(super) async fn run_step<T, F, Fut>(
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
        // At `info`, unlike the task's span: a span per step costs a Worker's console log
        // about as much as the step itself (`cargo xtask bench worker`), so under the Worker's
        // default filter (`warn`) an event in a step carries the task's fields, not the step's.
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
