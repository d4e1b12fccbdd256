//! When a task needs attention next, and what an alarm tick should do about it.
//!
//! A host keeps exactly one wake-up per task (a Durable Object alarm, a native timer) and sets
//! it to [`next_wake`] after every scheduling write. When it fires, [`decide_tick`] says what
//! to do; "nothing" is a valid answer, so an early or repeated wake-up is harmless.

use std::time::Duration;

use super::error::EngineError;
use super::journal::{StepKind, StepStatus, TaskState, Write};
use super::task::{TaskFailure, TaskStatus};
use super::time::Timestamp;

/// How long a task that expired stays visible as `failed` before it is purged.
pub const EXPIRED_VISIBLE_FOR: Duration = Duration::from_secs(60);

/// When a terminal task's rows are deleted: at its deadline, but never before an expired task
/// has been visible for [`EXPIRED_VISIBLE_FOR`].
pub fn purge_at(state: &TaskState) -> Option<Timestamp> {
    let deadline = state.task.deadline()?;
    let finished = state.task.finished_at.unwrap_or(deadline);
    if finished >= deadline {
        Some(finished.saturating_add(EXPIRED_VISIBLE_FOR))
    } else {
        Some(deadline)
    }
}

/// The earliest time the body should run: an explicit run request, a step retry, a sleep's end.
pub fn next_execution(state: &TaskState) -> Option<Timestamp> {
    let task = &state.task;
    let pending = state
        .steps
        .values()
        .filter(|step| step.status == StepStatus::Pending)
        .filter_map(|step| match step.kind {
            StepKind::Do => step.next_attempt_at,
            StepKind::Sleep => step.wake_at,
            _ => None,
        });
    task.next_run_at.into_iter().chain(pending).min()
}

/// The earliest deadline of an unanswered elicitation.
pub fn next_input_deadline(state: &TaskState) -> Option<Timestamp> {
    state
        .inputs
        .values()
        .filter(|input| input.blocking && !input.answered)
        .filter_map(|input| input.timeout_at)
        .min()
}

/// When the task next needs a tick, or `None` if nothing will ever happen to it by itself.
pub fn next_wake(state: &TaskState) -> Option<Timestamp> {
    let task = &state.task;
    if task.status.is_terminal() {
        return purge_at(state);
    }
    let execution = match task.status {
        TaskStatus::Working => next_execution(state),
        // Waiting for input: only a cancellation (which sets next_run_at) wakes the body.
        _ => task.next_run_at,
    };
    [execution, next_input_deadline(state), task.deadline()]
        .into_iter()
        .flatten()
        .min()
}

/// What a tick does to a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TickDecision {
    /// The task does not exist: nothing to do and nothing to write.
    Missing,
    /// Delete every row of the task: its retention is over.
    Purge,
    /// Apply these writes, then decide again.
    Write(Vec<Write>),
    /// Claim an activation and run the body.
    Run,
    /// Nothing is due; sleep until [`next_wake`].
    Idle,
}

/// Decides what a tick at `now` does. Pure: the caller applies the decision.
pub fn decide_tick(state: Option<&TaskState>, now: Timestamp) -> TickDecision {
    let Some(state) = state else {
        return TickDecision::Missing;
    };
    let task = &state.task;
    if task.status.is_terminal() {
        return match purge_at(state) {
            Some(at) if at <= now => TickDecision::Purge,
            _ => TickDecision::Idle,
        };
    }
    if let (Some(deadline), Some(ttl)) = (task.deadline(), task.ttl)
        && deadline <= now
    {
        let message = EngineError::Expired { ttl }.to_string();
        return TickDecision::Write(vec![finish(state, now, |t| {
            t.error = Some(TaskFailure::internal(message));
            TaskStatus::Failed
        })]);
    }
    if task.cancel_requested {
        return TickDecision::Write(vec![finish(state, now, |_| TaskStatus::Cancelled)]);
    }
    let timeouts = time_out_inputs(state, now);
    if !timeouts.is_empty() {
        return TickDecision::Write(timeouts);
    }
    if task.status == TaskStatus::InputRequired {
        return TickDecision::Idle;
    }
    match next_execution(state) {
        Some(at) if at <= now => TickDecision::Run,
        _ => TickDecision::Idle,
    }
}

/// A terminal transition made by the control plane. It also moves the lease on, so that an
/// activation still running somewhere can no longer write.
pub fn finish(
    state: &TaskState,
    now: Timestamp,
    set: impl FnOnce(&mut super::task::TaskRecord) -> TaskStatus,
) -> Write {
    let mut task = state.task.clone();
    let status = set(&mut task);
    task.transition(status, now);
    task.generation += 1;
    Write::PutTask(task)
}

/// Marks elicitations whose deadline passed as timed out; resumes the task when none is left.
fn time_out_inputs(state: &TaskState, now: Timestamp) -> Vec<Write> {
    let mut writes: Vec<Write> = state
        .inputs
        .values()
        .filter(|i| i.blocking && !i.answered && i.timeout_at.is_some_and(|at| at <= now))
        .map(|input| {
            let mut input = input.clone();
            input.answered = true;
            input.timed_out = true;
            input.answered_at = Some(now);
            Write::PutInput(input)
        })
        .collect();
    if writes.is_empty() {
        return writes;
    }
    let still_waiting = state
        .inputs
        .values()
        .any(|i| i.blocking && !i.answered && i.timeout_at.is_none_or(|at| at > now));
    let mut task = state.task.clone();
    task.last_updated_at = now;
    if task.status == TaskStatus::InputRequired && !still_waiting {
        task.transition(TaskStatus::Working, now);
        task.next_run_at = Some(now);
    }
    writes.push(Write::PutTask(task));
    writes
}

/// The task row of a claimed activation: a new lease, and a redelivery anchor `lease` ahead
/// that runs the body again if this activation dies without settling.
pub fn claim(state: &TaskState, now: Timestamp, lease: Duration) -> super::task::TaskRecord {
    let mut task = state.task.clone();
    task.run_attempt += 1;
    task.generation += 1;
    task.next_run_at = Some(now.saturating_add(lease));
    task
}
