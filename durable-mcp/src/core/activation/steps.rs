//! Steps, as the activation decides them: whether a step replays or runs an attempt, how an
//! attempt's end is recorded (a value, a retry later, a failure for good), and the closures
//! being polled.

use std::time::Duration;

use super::attempts::{Attempt, AttemptId, Issued};
use super::{Activation, AttemptResult, Decision, StepEnd, StepNext, Stop, rows};
use crate::core::error::EngineError;
use crate::core::journal::{StepKind, StepStatus, Write};
use crate::core::outcome::Suspension;
use crate::core::retry::{RetryPolicy, jitter_fraction};
use crate::core::step_failure::{StepFailure, StepFailureKind};
use crate::core::time::Timestamp;
use crate::core::trace;

impl Activation {
    /// Decides what the step under `key` does, retried under `retry` and with attempts limited
    /// to `timeout` (the task's own when `None`). A pending retry not due yet stops the body.
    pub fn step(
        &mut self,
        key: &str,
        retry: Option<RetryPolicy>,
        timeout: Option<Duration>,
        now: Timestamp,
    ) -> Decision<StepNext> {
        let policy = retry.unwrap_or(self.settings.retry);
        if let Err(error) = policy.validate() {
            let what = format!("step {key:?}");
            let reason = error.0.to_owned();
            return Err(self.fail(EngineError::InvalidPolicy { what, reason }));
        }
        let number = match self.recorded_step(key, StepKind::Do)? {
            None => 1,
            Some(row) => match row.status {
                StepStatus::Completed => {
                    let value = row.result.clone().unwrap_or_else(|| "null".to_owned());
                    return Ok(StepNext::Replay(value));
                }
                StepStatus::Failed => return Ok(StepNext::Failed(StepFailure::of_row(row))),
                StepStatus::Pending if row.next_attempt_at.is_some_and(|at| at > now) => {
                    return Err(self.suspend(Suspension::Wait));
                }
                StepStatus::Pending => row.attempt + 1,
            },
        };
        self.break_ground()?;
        if self.cleanup_until.is_some_and(|deadline| now >= deadline) {
            // The cleanup's time is up: the task is cancelled with the rest unrun.
            return Err(self.suspend(Suspension::Cancelled));
        }
        if self.settings.hand_off_at.is_some_and(|at| now >= at) {
            // Recorded steps stay; the next activation replays them and starts this one.
            return Err(self.suspend(Suspension::HandOff));
        }
        let id = self.attempts.issue(Issued {
            key: key.to_owned(),
            number,
            policy,
            started_at: now,
        });
        trace::attempt_started(&self.journal.task, key, number);
        let timeout = timeout.unwrap_or(self.settings.step_timeout);
        Ok(StepNext::Run(Attempt {
            id,
            number,
            timeout,
        }))
    }

    /// Records how the attempt `id` ended, and says what follows: the value or a final
    /// failure, or (a retry is due later) a stop. An attempt the machine is not waiting for
    /// fails the task: the runtime answered one it was never given, or answered it twice.
    pub fn attempt_done(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Timestamp,
    ) -> Decision<StepEnd> {
        let Some(attempt) = self.attempts.answer(id) else {
            return Err(self.not_running(id));
        };
        let seq = self.take_seq();
        let earlier = self.journal.steps.get(&attempt.key);
        let mut row = rows::attempt(&attempt.key, attempt.number, earlier, seq, now);
        let took = now.saturating_since(attempt.started_at);
        let task = &self.journal.task;
        let end = match result {
            AttemptResult::Value(json) => {
                row.result = Some(json);
                trace::step_completed(task, &attempt.key, attempt.number, took);
                Some(StepEnd::Completed)
            }
            AttemptResult::Error {
                message,
                retryable,
                timed_out,
            } => {
                row.last_error = Some(message.clone());
                if retryable && attempt.policy.allows_retry_after(attempt.number) {
                    let retry_at = self.retry_at(&attempt, now);
                    row.status = StepStatus::Pending;
                    row.completed_at = None;
                    row.next_attempt_at = Some(retry_at);
                    let task = &self.journal.task;
                    trace::retry_scheduled(
                        task,
                        &attempt.key,
                        attempt.number,
                        took,
                        &message,
                        retry_at,
                    );
                    None
                } else {
                    let failure = StepFailure {
                        kind: final_failure_kind(retryable, timed_out),
                        attempts: attempt.number,
                        message,
                    };
                    trace::step_failed(task, &attempt.key, took, &failure);
                    row.status = StepStatus::Failed;
                    row.result = Some(failure.to_json());
                    Some(StepEnd::Failed(failure))
                }
            }
        };
        if self.suspension.is_some() && end.is_some() {
            self.rerun = true;
        }
        self.push(Write::PutStep(row));
        end.ok_or_else(|| self.suspend(Suspension::Wait))
    }

    /// The attempt `id`, whose future was dropped before it finished (its branch lost a
    /// `select!`, or the activation ended): nothing is recorded, the next activation runs it
    /// again. An attempt the machine is not waiting for fails the task, as in
    /// [`attempt_done`](Self::attempt_done).
    pub fn attempt_abandoned(&mut self, id: AttemptId) {
        if self.attempts.answer(id).is_none() {
            self.not_running(id);
        }
    }

    /// The closure of the step under `key` is being polled (or called): any journal operation
    /// on this task until [`leave_closure`](Self::leave_closure) is a nested step.
    pub fn enter_closure(&mut self, key: &str) {
        self.closures.push(key.to_owned());
    }

    /// The poll of the innermost closure returned.
    pub fn leave_closure(&mut self) {
        self.closures.pop();
    }

    /// When the attempt, which failed and may be retried, runs again: after its policy's
    /// delay, spread by a jitter the same on every replay.
    fn retry_at(&self, attempt: &Issued, now: Timestamp) -> Timestamp {
        let spread = jitter_fraction(self.task_id(), &attempt.key, attempt.number);
        now.saturating_add(attempt.policy.delay_after(attempt.number, spread))
    }

    /// An answer to an attempt the machine is not waiting for: a bug in the runtime.
    fn not_running(&mut self, id: AttemptId) -> Stop {
        let attempt = id.number();
        self.fail(EngineError::UnknownAttempt { attempt })
    }
}

/// Why a step failed for good after an attempt that was `retryable` (or not) and `timed_out`
/// (or not).
fn final_failure_kind(retryable: bool, timed_out: bool) -> StepFailureKind {
    match (retryable, timed_out) {
        (false, _) => StepFailureKind::NonRetryable,
        (true, true) => StepFailureKind::TimedOut,
        (true, false) => StepFailureKind::AttemptsExhausted,
    }
}
