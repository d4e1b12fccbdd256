//! When a task needs attention next.
//!
//! A host keeps exactly one wake-up per task (a Durable Object alarm, a native timer) and sets
//! it to [`next_wake`] after every scheduling write. When it fires, the tick machine
//! (`core::tick`) says what to do; "nothing" is a valid answer, so an early or repeated wake-up
//! is harmless.

use std::time::Duration;

use super::child::undelivered;
use super::journal::{StepKind, StepStatus, TaskState};
use super::task::{TaskRecord, TaskStatus};
use super::time::Timestamp;

/// How long a task that expired stays visible as `failed` before it is purged.
pub const EXPIRED_VISIBLE_FOR: Duration = Duration::from_secs(60);

/// When a terminal task's rows are deleted: at its deadline, but never before an expired task
/// has been visible for [`EXPIRED_VISIBLE_FOR`].
pub fn purge_at(state: &TaskState) -> Option<Timestamp> {
    purge_time(&state.task)
}

/// [`purge_at`] from the task row alone (the only part of the state it reads).
pub fn purge_time(task: &TaskRecord) -> Option<Timestamp> {
    let deadline = task.deadline()?;
    let finished = task.finished_at.unwrap_or(deadline);
    if finished >= deadline {
        Some(finished.saturating_add(EXPIRED_VISIBLE_FOR))
    } else {
        Some(deadline)
    }
}

/// A pending step that wakes the body by itself at a time of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimedWait<'a> {
    /// The retry of the step under this key.
    Retry(&'a str),
    /// The end of the sleep under this key.
    SleepEnd(&'a str),
}

impl std::fmt::Display for TimedWait<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimedWait::Retry(key) => write!(f, "retry of step {key:?}"),
            TimedWait::SleepEnd(key) => write!(f, "end of sleep {key:?}"),
        }
    }
}

/// The pending retries and sleeps of a task, each with when it is due.
pub fn timed_waits(state: &TaskState) -> impl Iterator<Item = (Timestamp, TimedWait<'_>)> {
    state
        .steps
        .values()
        .filter(|row| row.status == StepStatus::Pending)
        .filter_map(|row| match row.kind {
            StepKind::Do => Some((row.next_attempt_at?, TimedWait::Retry(&row.key))),
            StepKind::Sleep => Some((row.wake_at?, TimedWait::SleepEnd(&row.key))),
            _ => None,
        })
}

/// The earliest time the body should run: an explicit run request, a step retry, a sleep's end.
pub fn next_execution(state: &TaskState) -> Option<Timestamp> {
    let pending = timed_waits(state).map(|(at, _)| at);
    state.task.next_run_at.into_iter().chain(pending).min()
}

/// What asked for a run of the body, kept with the request in the task row
/// ([`TaskRecord::run_cause`](super::TaskRecord::run_cause)) until the activation it asked for
/// starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunCause {
    /// An answer to the task's input requests (or to an offer) arrived.
    Answer,
    /// An input request's deadline passed without an answer.
    InputTimedOut,
    /// A child task ended.
    ChildEnded,
    /// A cancel was asked for: the body runs to see it.
    Cancel,
    /// An operator woke the task (the inspector).
    Operator,
    /// The last activation handed off, its time on the host used up.
    HandOff,
    /// A step recorded its result after the last activation's body had stopped.
    LateResult,
    /// The last activation ended without settling (its process stopped, or its lease ran out):
    /// the claim's redelivery.
    LostActivation,
}

impl RunCause {
    const ALL: [RunCause; 8] = [
        RunCause::Answer,
        RunCause::InputTimedOut,
        RunCause::ChildEnded,
        RunCause::Cancel,
        RunCause::Operator,
        RunCause::HandOff,
        RunCause::LateResult,
        RunCause::LostActivation,
    ];

    /// The name kept in the task row.
    pub fn as_str(self) -> &'static str {
        match self {
            RunCause::Answer => "answer",
            RunCause::InputTimedOut => "input-timed-out",
            RunCause::ChildEnded => "child",
            RunCause::Cancel => "cancel",
            RunCause::Operator => "operator",
            RunCause::HandOff => "hand-off",
            RunCause::LateResult => "late-result",
            RunCause::LostActivation => "lost-activation",
        }
    }

    /// The cause a task row names; `None` for a name this version does not know.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|cause| cause.as_str() == name)
    }
}

impl std::fmt::Display for RunCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RunCause::Answer => "an answer arrived",
            RunCause::InputTimedOut => "an input request timed out",
            RunCause::ChildEnded => "a child task ended",
            RunCause::Cancel => "a cancel was asked for",
            RunCause::Operator => "an operator woke the task",
            RunCause::HandOff => "the last activation handed off (its time on the host was up)",
            RunCause::LateResult => "a step recorded its result after the last activation stopped",
            RunCause::LostActivation => {
                "the last activation was lost (its process stopped, or its lease ran out)"
            }
        })
    }
}

/// Why the body of a task runs: what in its rows made it due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunReason {
    /// The task is new.
    New,
    /// A cancel was requested: the body runs the compensations.
    Cleanup,
    /// The retry of the step under this key is due.
    Retry(String),
    /// The sleep under this key is over.
    SleepEnd(String),
    /// A run was requested, by what the row names (`None`: a row written before causes
    /// were recorded).
    Requested(Option<RunCause>),
}

impl std::fmt::Display for RunReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunReason::New => f.write_str("new task"),
            RunReason::Cleanup => f.write_str("cancel requested: running compensations"),
            RunReason::Retry(key) => TimedWait::Retry(key).fmt(f),
            RunReason::SleepEnd(key) => TimedWait::SleepEnd(key).fmt(f),
            RunReason::Requested(Some(cause)) => write!(f, "run requested: {cause}"),
            RunReason::Requested(None) => f.write_str(
                "run requested (an answer, a child's end, a hand-off or a lost activation)",
            ),
        }
    }
}

/// Why the body of a working task is due at `now` ([`next_execution`] has passed), or `None`
/// if it is not due.
pub fn execution_due(state: &TaskState, now: Timestamp) -> Option<RunReason> {
    let task = &state.task;
    let step = timed_waits(state).min_by_key(|(at, _)| *at);
    let at = task
        .next_run_at
        .into_iter()
        .chain(step.map(|(at, _)| at))
        .min()?;
    if at > now {
        return None;
    }
    Some(match step {
        _ if task.run_attempt == 0 => RunReason::New,
        Some((at, wait)) if task.next_run_at.is_none_or(|run| at < run) => match wait {
            TimedWait::Retry(key) => RunReason::Retry(key.to_owned()),
            TimedWait::SleepEnd(key) => RunReason::SleepEnd(key.to_owned()),
        },
        _ => RunReason::Requested(task.run_cause.as_deref().and_then(RunCause::parse)),
    })
}

/// Whether a task has cleanup left to run before it may be settled `cancelled`: a
/// compensation registered and not finished, and the cleanup's deadline (once it began) not
/// passed at `now`.
pub fn cleanup_left(state: &TaskState, now: Timestamp) -> bool {
    state.has_cleanup()
        && state
            .cleanup_deadline()
            .is_none_or(|deadline| deadline > now)
}

/// Whether a cancellation waits for compensations: the body runs (to run them) at the times
/// [`cleanup_execution`] gives, whatever the task's status.
fn cleaning_up(state: &TaskState) -> bool {
    state.task.cancel_requested && state.has_cleanup()
}

/// The earliest time the body of a task whose cancellation waits for its compensations should
/// run: an explicit run request, or the retry of the compensation that runs next. They run the
/// last registered first, one at a time, so that is the pending one registered last (the
/// highest `seq`). The body's own retries and sleeps no longer count: the cancel stops it
/// before them.
pub fn cleanup_execution(state: &TaskState) -> Option<Timestamp> {
    let next = state.pending_cleanup().max_by_key(|row| row.seq);
    let retry = next.and_then(|row| row.next_attempt_at);
    state.task.next_run_at.into_iter().chain(retry).min()
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
        if undelivered(task).is_some() {
            // Its parent waits to hear how it ended: at once.
            return task.finished_at.or(Some(task.last_updated_at));
        }
        return purge_at(state);
    }
    if cleaning_up(state) {
        // Only the compensations, their deadline and the task's own are due now: the cancel
        // stops the body before its sleeps, retries and input deadlines.
        return [
            cleanup_execution(state),
            state.cleanup_deadline(),
            task.deadline(),
        ]
        .into_iter()
        .flatten()
        .min();
    }
    let execution = match task.status {
        TaskStatus::Working => next_execution(state),
        // Waiting for input: only a cancellation (which sets next_run_at) wakes the body; a
        // run request left over from a concurrent branch waits for the answer, which sets it
        // again.
        _ => task.next_run_at.filter(|_| task.cancel_requested),
    };
    [execution, next_input_deadline(state), task.deadline()]
        .into_iter()
        .flatten()
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_rows::{at, elicit, pending, state};

    #[test]
    fn the_next_wake_is_the_earliest_candidate() {
        let mut s = state();
        assert_eq!(next_wake(&s), Some(at(3_600_000)), "only the deadline");
        s.steps
            .insert("nap".into(), pending("nap", StepKind::Sleep, at(500)));
        s.steps
            .insert("retry".into(), pending("retry", StepKind::Do, at(300)));
        assert_eq!(next_wake(&s), Some(at(300)));
        s.task.next_run_at = Some(at(100));
        assert_eq!(next_wake(&s), Some(at(100)));
    }

    #[test]
    fn waiting_for_input_wakes_only_for_deadlines_and_requests() {
        let mut s = state();
        s.task.status = TaskStatus::InputRequired;
        s.steps
            .insert("nap".into(), pending("nap", StepKind::Sleep, at(500)));
        s.inputs.insert("q".into(), elicit("q", Some(at(900))));
        assert_eq!(next_wake(&s), Some(at(900)));
        // A run request waits for the answer (a concurrent branch asked for it); a
        // cancellation does not.
        s.task.next_run_at = Some(at(10));
        assert_eq!(next_wake(&s), Some(at(900)));
        s.task.cancel_requested = true;
        assert_eq!(next_wake(&s), Some(at(10)));
    }

    #[test]
    fn terminal_tasks_wake_only_to_be_purged() {
        let mut s = state();
        s.task.transition(TaskStatus::Completed, at(10));
        assert_eq!(next_wake(&s), Some(at(3_600_000)));
        s.task.ttl = None;
        assert_eq!(next_wake(&s), None);
    }
}
