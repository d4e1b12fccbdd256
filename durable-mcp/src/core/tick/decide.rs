//! What a tick does to a task as loaded: each function is a pure decision on the rows.

use std::time::Duration;

use crate::core::child::undelivered;
use crate::core::error::EngineError;
use crate::core::journal::{TaskState, Write};
use crate::core::schedule::{
    RunCause, RunReason, cleanup_execution, cleanup_left, execution_due, purge_at,
};
use crate::core::task::{TaskFailure, TaskRecord, TaskStatus};
use crate::core::terminal::{finish, settle_cancel};
use crate::core::time::Timestamp;

/// What is due for a task that exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Due {
    /// Tell the parent of this ended child how it ended.
    Notify,
    /// Delete every row of the task: its retention is over.
    Purge,
    /// Apply these writes under the version read, then decide again.
    Write(Vec<Write>),
    /// Claim an activation and run the body, for this reason.
    Run(RunReason),
    /// Nothing is due; sleep until the next wake.
    Nothing,
}

/// Decides what a tick at `now` does to `state`, on an engine whose own unsettled claim on the
/// task has the generation `own_claim`, if it has one: any other claim in the row is dead (its
/// engine is gone), so its redelivery anchor is due at once.
pub(super) fn decide(state: &TaskState, now: Timestamp, own_claim: Option<u64>) -> Due {
    let task = &state.task;
    if task.status.is_terminal() {
        if undelivered(task).is_some() {
            return Due::Notify;
        }
        return match purge_at(state) {
            Some(at) if at <= now => Due::Purge,
            _ => Due::Nothing,
        };
    }
    if own_claim != Some(task.generation)
        && let Some(task) = redeliver_now(task, now)
    {
        return Due::Write(vec![Write::PutTask(task)]);
    }
    if let (Some(deadline), Some(ttl)) = (task.deadline(), task.ttl)
        && deadline <= now
    {
        let message = EngineError::Expired { ttl }.to_string();
        return Due::Write(vec![finish(state, now, |t| {
            t.error = Some(TaskFailure::internal(message));
            TaskStatus::Failed
        })]);
    }
    if task.cancel_requested {
        if cleanup_left(state, now) {
            // The body runs its compensations, each when it is due.
            return match cleanup_execution(state) {
                Some(at) if at <= now => Due::Run(RunReason::Cleanup),
                _ => Due::Nothing,
            };
        }
        return Due::Write(vec![settle_cancel(state, now)]);
    }
    let timeouts = time_out_inputs(state, now);
    if !timeouts.is_empty() {
        return Due::Write(timeouts);
    }
    if task.status == TaskStatus::InputRequired {
        return Due::Nothing;
    }
    execution_due(state, now).map_or(Due::Nothing, Due::Run)
}

/// The task row with a claim's redelivery anchor moved to `now`, if it is live and holds one
/// in the future. Only a claim sets `next_run_at` ahead; one whose engine is gone has no
/// activation running, so its redelivery is due now.
fn redeliver_now(task: &TaskRecord, now: Timestamp) -> Option<TaskRecord> {
    if task.status.is_terminal() || task.next_run_at.is_none_or(|at| at <= now) {
        return None;
    }
    let mut task = task.clone();
    task.schedule_run(now, RunCause::LostActivation);
    Some(task)
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
        task.request_run(now, RunCause::InputTimedOut);
    }
    writes.push(Write::PutTask(task));
    writes
}

/// The task row of a claimed activation: a new lease, and a redelivery anchor `lease` ahead
/// that runs the body again if this activation dies without settling.
pub(super) fn claim(state: &TaskState, now: Timestamp, lease: Duration) -> TaskRecord {
    let mut task = state.task.clone();
    task.run_attempt += 1;
    task.generation += 1;
    task.schedule_run(now.saturating_add(lease), RunCause::LostActivation);
    task
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::journal::StepKind;
    use crate::core::test_rows::{at, elicit, pending, state};

    /// The generation of a claim this engine made on the task as it is: its anchor stands.
    fn own(state: &TaskState) -> Option<u64> {
        Some(state.task.generation)
    }

    #[test]
    fn a_terminal_task_is_purged_at_its_time_and_not_before() {
        let mut s = state();
        s.task.transition(TaskStatus::Completed, at(10));
        assert_eq!(decide(&s, at(3_599_999), own(&s)), Due::Nothing);
        assert_eq!(decide(&s, at(3_600_000), own(&s)), Due::Purge);
    }

    #[test]
    fn expiry_comes_before_everything_else() {
        let mut s = state();
        s.task.cancel_requested = true;
        let Due::Write(writes) = decide(&s, at(3_600_000), own(&s)) else {
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
        let Due::Write(writes) = decide(&s, at(1), own(&s)) else {
            panic!("expected a write");
        };
        assert!(matches!(&writes[..], [Write::PutTask(t)] if t.status == TaskStatus::Cancelled));
    }

    #[test]
    fn a_cancel_with_compensations_runs_them_when_due_and_settles_at_the_deadline() {
        let mut s = state();
        s.task.cancel_requested = true;
        s.task.next_run_at = None;
        // A compensation waiting for its retry at 500, a sleep of the body due long before.
        s.steps.insert(
            "$cleanup:undo".into(),
            pending("$cleanup:undo", StepKind::Do, at(500)),
        );
        s.steps
            .insert("nap".into(), pending("nap", StepKind::Sleep, at(100)));
        assert_eq!(
            decide(&s, at(200), own(&s)),
            Due::Nothing,
            "the sleep no longer counts"
        );
        assert_eq!(decide(&s, at(500), own(&s)), Due::Run(RunReason::Cleanup));
        let mut deadline = pending("$cancelled", StepKind::Value, at(0));
        deadline.wake_at = Some(at(800));
        s.steps.insert("$cancelled".into(), deadline);
        assert_eq!(
            decide(&s, at(799), own(&s)),
            Due::Run(RunReason::Cleanup),
            "still within the deadline"
        );
        let Due::Write(writes) = decide(&s, at(800), own(&s)) else {
            panic!("expected the cancel to settle at the deadline");
        };
        let [Write::PutTask(task)] = writes.as_slice() else {
            panic!("one task write");
        };
        assert_eq!(task.status, TaskStatus::Cancelled);
        let message = task.status_message.as_deref().unwrap_or_default();
        assert!(message.contains("1 compensation(s) not run"), "{message}");
    }

    #[test]
    fn elicitation_deadlines_time_out_and_resume() {
        let mut s = state();
        s.task.status = TaskStatus::InputRequired;
        s.inputs.insert("q".into(), elicit("q", Some(at(900))));
        assert_eq!(decide(&s, at(899), own(&s)), Due::Nothing);
        let Due::Write(writes) = decide(&s, at(900), own(&s)) else {
            panic!("expected a write");
        };
        assert!(matches!(&writes[0], Write::PutInput(i) if i.timed_out && i.answered));
        assert!(matches!(&writes[1], Write::PutTask(t)
            if t.status == TaskStatus::Working && t.next_run_at == Some(at(900))));
    }

    #[test]
    fn runs_only_when_something_is_due() {
        let mut s = state();
        assert_eq!(decide(&s, at(1), own(&s)), Due::Nothing);
        s.steps
            .insert("nap".into(), pending("nap", StepKind::Sleep, at(500)));
        assert_eq!(decide(&s, at(499), own(&s)), Due::Nothing);
        s.task.run_attempt = 1;
        let slept = RunReason::SleepEnd("nap".into());
        assert_eq!(decide(&s, at(500), own(&s)), Due::Run(slept));
        s.steps
            .insert("fetch".into(), pending("fetch", StepKind::Do, at(300)));
        let retry = RunReason::Retry("fetch".into());
        assert_eq!(
            decide(&s, at(500), own(&s)),
            Due::Run(retry),
            "the earliest"
        );
        s.task.next_run_at = Some(at(200));
        assert_eq!(
            decide(&s, at(500), own(&s)),
            Due::Run(RunReason::Requested(None)),
            "a row written before causes were recorded"
        );
        s.task.run_cause = Some("answer".into());
        let answered = decide(&s, at(500), own(&s));
        assert_eq!(
            answered,
            Due::Run(RunReason::Requested(Some(RunCause::Answer)))
        );
        let Due::Run(reason) = answered else {
            unreachable!()
        };
        assert_eq!(reason.to_string(), "run requested: an answer arrived");
        s.task.run_attempt = 0;
        assert_eq!(decide(&s, at(500), own(&s)), Due::Run(RunReason::New));
    }

    #[test]
    fn a_claim_of_another_engine_is_redelivered_at_once() {
        let mut s = state();
        s.task.run_attempt = 1;
        s.task.next_run_at = Some(at(60_000));
        assert_eq!(decide(&s, at(5), own(&s)), Due::Nothing);
        let Due::Write(writes) = decide(&s, at(5), None) else {
            panic!("expected the anchor to move");
        };
        assert!(matches!(&writes[..], [Write::PutTask(t)] if t.next_run_at == Some(at(5))));
        let [Write::PutTask(moved)] = &writes[..] else {
            unreachable!()
        };
        s.task = moved.clone();
        assert_eq!(
            decide(&s, at(5), None),
            Due::Run(RunReason::Requested(Some(RunCause::LostActivation))),
            "an anchor due now stays, and says why"
        );
    }

    #[test]
    fn a_claim_moves_the_lease_and_sets_a_redelivery_anchor() {
        let s = state();
        let claimed = claim(&s, at(5), Duration::from_secs(60));
        assert_eq!(claimed.generation, s.task.generation + 1);
        assert_eq!(claimed.run_attempt, 1);
        assert_eq!(claimed.next_run_at, Some(at(60_005)));
        assert_eq!(claimed.run_cause.as_deref(), Some("lost-activation"));
        assert_eq!(
            claimed.last_updated_at, s.task.last_updated_at,
            "a claim is not a change"
        );
    }
}
