//! When a task needs attention next, and what an alarm tick should do about it.
//!
//! A host keeps exactly one wake-up per task (a Durable Object alarm, a native timer) and sets
//! it to [`next_wake`] after every scheduling write. When it fires, [`decide_tick`] says what
//! to do; "nothing" is a valid answer, so an early or repeated wake-up is harmless.

use std::time::Duration;

use super::error::EngineError;
use super::journal::{StepKind, StepStatus, TaskState, Write};
use super::task::{TaskFailure, TaskRecord, TaskStatus};
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::core::control::test_task;
    use crate::core::journal::{InputRow, StepRow};

    const T0: Timestamp = Timestamp(1_000_000);

    fn at(offset: u64) -> Timestamp {
        Timestamp(T0.0 + offset)
    }

    fn state() -> TaskState {
        TaskState {
            task: test_task(T0, Some(Duration::from_secs(3600))),
            steps: BTreeMap::new(),
            inputs: BTreeMap::new(),
        }
    }

    fn pending(key: &str, kind: StepKind, when: Timestamp) -> StepRow {
        StepRow {
            key: key.into(),
            kind,
            status: StepStatus::Pending,
            result: None,
            attempt: 1,
            next_attempt_at: (kind == StepKind::Do).then_some(when),
            wake_at: (kind == StepKind::Sleep).then_some(when),
            last_error: None,
            seq: 1,
            created_at: T0,
            completed_at: None,
        }
    }

    fn elicit(key: &str, timeout_at: Option<Timestamp>) -> InputRow {
        InputRow {
            key: key.into(),
            request: "{}".into(),
            response: None,
            answered: false,
            answered_at: None,
            timeout_at,
            timed_out: false,
            blocking: true,
            consumed: false,
            seq: 2,
            created_at: T0,
        }
    }

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
        assert_eq!(decide_tick(Some(&s), at(3_599_999)), TickDecision::Idle);
        assert_eq!(decide_tick(Some(&s), at(3_600_000)), TickDecision::Purge);
        s.task.ttl = None;
        assert_eq!(next_wake(&s), None);
    }

    #[test]
    fn expiry_comes_before_everything_else() {
        let mut s = state();
        s.task.cancel_requested = true;
        let TickDecision::Write(writes) = decide_tick(Some(&s), at(3_600_000)) else {
            panic!("expected an expiry write");
        };
        let [Write::PutTask(task)] = writes.as_slice() else {
            panic!("one task write");
        };
        assert_eq!(task.status, TaskStatus::Failed);
        assert_eq!(task.generation, s.task.generation + 1, "the lease moves on");
        assert_eq!(
            task.error.as_ref().map(|e| e.message.as_str()),
            Some("task expired after 1h")
        );
    }

    #[test]
    fn a_requested_cancel_settles_on_the_tick() {
        let mut s = state();
        s.task.cancel_requested = true;
        let TickDecision::Write(writes) = decide_tick(Some(&s), at(1)) else {
            panic!("expected a write");
        };
        assert!(matches!(&writes[..], [Write::PutTask(t)] if t.status == TaskStatus::Cancelled));
    }

    #[test]
    fn elicitation_deadlines_time_out_and_resume() {
        let mut s = state();
        s.task.status = TaskStatus::InputRequired;
        s.inputs.insert("q".into(), elicit("q", Some(at(900))));
        assert_eq!(decide_tick(Some(&s), at(899)), TickDecision::Idle);
        let TickDecision::Write(writes) = decide_tick(Some(&s), at(900)) else {
            panic!("expected a write");
        };
        assert!(matches!(&writes[0], Write::PutInput(i) if i.timed_out && i.answered));
        assert!(matches!(&writes[1], Write::PutTask(t)
            if t.status == TaskStatus::Working && t.next_run_at == Some(at(900))));
    }

    #[test]
    fn runs_only_when_something_is_due() {
        let mut s = state();
        assert_eq!(decide_tick(Some(&s), at(1)), TickDecision::Idle);
        s.steps
            .insert("nap".into(), pending("nap", StepKind::Sleep, at(500)));
        assert_eq!(decide_tick(Some(&s), at(499)), TickDecision::Idle);
        assert_eq!(decide_tick(Some(&s), at(500)), TickDecision::Run);
        assert_eq!(decide_tick(None, at(500)), TickDecision::Missing);
    }

    #[test]
    fn a_claim_moves_the_lease_and_sets_a_redelivery_anchor() {
        let s = state();
        let claimed = claim(&s, at(5), Duration::from_secs(60));
        assert_eq!(claimed.generation, s.task.generation + 1);
        assert_eq!(claimed.run_attempt, 1);
        assert_eq!(claimed.next_run_at, Some(at(60_005)));
        assert_eq!(
            claimed.last_updated_at, s.task.last_updated_at,
            "a claim is not a change"
        );
    }
}
