//! Replay decisions: what each journal operation of a task body does, given what the journal
//! recorded under its key.
//!
//! Every function here is pure. The runtime's `TaskContext` asks, applies the writes it is
//! given, and then returns to the body, runs the step's closure, or stops the run, as told.
//! New ground (a miss) is also where a waiting cancellation is observed.

use super::error::EngineError;
use super::journal::{InputRow, StepKind, StepRow, StepStatus, TaskState, Write};
use super::retry::{RetryPolicy, jitter_fraction};
use super::step_failure::{StepFailure, StepFailureKind};
use super::time::Timestamp;

/// The activation's view when the body asks the journal.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    /// The journal loaded at the start of the activation (plus the activation's own inputs).
    pub journal: &'a TaskState,
    /// The time now.
    pub now: Timestamp,
    /// Whether a cancellation waits to be observed.
    pub cancel_requested: bool,
}

impl Cursor<'_> {
    /// Checks that `key`, if recorded, was recorded as `requested`.
    pub fn check_kind(&self, key: &str, requested: StepKind) -> Result<(), EngineError> {
        match self.journal.recorded_kind(key) {
            Some(recorded) if recorded != requested => Err(EngineError::Nondeterminism {
                key: key.to_owned(),
                recorded,
                requested,
            }),
            _ => Ok(()),
        }
    }

    fn step(&self, key: &str, kind: StepKind) -> Result<Option<&StepRow>, EngineError> {
        self.check_kind(key, kind)?;
        Ok(self.journal.steps.get(key))
    }

    fn input(&self, key: &str, kind: StepKind) -> Result<Option<&InputRow>, EngineError> {
        self.check_kind(key, kind)?;
        Ok(self.journal.inputs.get(key))
    }
}

/// What a `step` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepReplay {
    /// Recorded: return this value (JSON text); the closure does not run.
    Value(String),
    /// Recorded as failed: return this failure again.
    Failed(StepFailure),
    /// A retry is pending and not due yet: stop and wait.
    Wait,
    /// New ground with a cancellation waiting: stop.
    Cancelled,
    /// Run the closure; this is attempt number `attempt`.
    Run {
        /// The attempt's number, from 1.
        attempt: u32,
    },
}

/// Decides what the step under `key` does.
pub fn replay_step(cursor: &Cursor<'_>, key: &str) -> Result<StepReplay, EngineError> {
    let attempt = match cursor.step(key, StepKind::Do)? {
        None => 1,
        Some(row) => match row.status {
            StepStatus::Completed => {
                let value = row.result.clone().unwrap_or_else(|| "null".to_owned());
                return Ok(StepReplay::Value(value));
            }
            StepStatus::Failed => return Ok(StepReplay::Failed(StepFailure::of_row(row))),
            StepStatus::Pending if row.next_attempt_at.is_some_and(|at| at > cursor.now) => {
                return Ok(StepReplay::Wait);
            }
            StepStatus::Pending => row.attempt + 1,
        },
    };
    if cursor.cancel_requested {
        return Ok(StepReplay::Cancelled);
    }
    Ok(StepReplay::Run { attempt })
}

/// How one attempt of a step's closure ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// It returned a value, already serialised and checked.
    Value(String),
    /// It failed.
    Error {
        /// What went wrong.
        message: String,
        /// Whether the policy may try again.
        retryable: bool,
        /// Whether it failed by outlasting the step's timeout.
        timed_out: bool,
    },
}

/// What follows an attempt, besides writing its row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AfterAttempt {
    /// The step completed: return the value.
    Completed,
    /// Another attempt is due at this time: stop and wait.
    RetryAt(Timestamp),
    /// The step failed for good: return the failure.
    Failed(StepFailure),
}

/// The row an attempt leaves, and what follows it.
///
/// `seq` numbers a row created now; a row that exists keeps its own.
pub fn record_attempt(
    cursor: &Cursor<'_>,
    key: &str,
    attempt: u32,
    result: AttemptResult,
    policy: &RetryPolicy,
    seq: u64,
) -> (StepRow, AfterAttempt) {
    let now = cursor.now;
    let existing = cursor.journal.steps.get(key);
    let mut row = StepRow {
        key: key.to_owned(),
        kind: StepKind::Do,
        status: StepStatus::Completed,
        result: None,
        attempt,
        next_attempt_at: None,
        wake_at: None,
        last_error: None,
        seq: existing.map_or(seq, |row| row.seq),
        created_at: existing.map_or(now, |row| row.created_at),
        completed_at: Some(now),
    };
    let (message, retryable, timed_out) = match result {
        AttemptResult::Value(json) => {
            row.result = Some(json);
            return (row, AfterAttempt::Completed);
        }
        AttemptResult::Error {
            message,
            retryable,
            timed_out,
        } => (message, retryable, timed_out),
    };
    row.last_error = Some(message.clone());
    if retryable && policy.allows_retry_after(attempt) {
        let spread = jitter_fraction(&cursor.journal.task.task_id, key, attempt);
        let retry_at = now.saturating_add(policy.delay_after(attempt, spread));
        row.status = StepStatus::Pending;
        row.completed_at = None;
        row.next_attempt_at = Some(retry_at);
        return (row, AfterAttempt::RetryAt(retry_at));
    }
    let kind = match (retryable, timed_out) {
        (false, _) => StepFailureKind::NonRetryable,
        (true, true) => StepFailureKind::TimedOut,
        (true, false) => StepFailureKind::AttemptsExhausted,
    };
    let failure = StepFailure {
        kind,
        attempts: attempt,
        message,
    };
    row.status = StepStatus::Failed;
    row.result = Some(failure.to_json());
    (row, AfterAttempt::Failed(failure))
}

/// What a `sleep` does: `writes` to apply, then go on or wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SleepReplay {
    /// Apply the writes (if any), then return to the body.
    Done(Vec<Write>),
    /// Apply the writes (if any), then stop and wait for `wake_at`.
    Wait(Vec<Write>),
    /// New ground with a cancellation waiting: stop.
    Cancelled,
}

/// Decides what the sleep under `key`, ending at `wake_at`, does. A sleep ends when its time
/// comes, or at once when an offer's answer asked for the next sleep to be cut.
pub fn replay_sleep(
    cursor: &Cursor<'_>,
    key: &str,
    wake_at: Timestamp,
    seq: u64,
) -> Result<SleepReplay, EngineError> {
    let now = cursor.now;
    let cut = cursor.journal.task.cut_next_sleep;
    let row = match cursor.step(key, StepKind::Sleep)? {
        Some(row) if row.status != StepStatus::Pending => return Ok(SleepReplay::Done(vec![])),
        Some(row) => row.clone(),
        None if cursor.cancel_requested => return Ok(SleepReplay::Cancelled),
        None => StepRow {
            key: key.to_owned(),
            kind: StepKind::Sleep,
            status: StepStatus::Pending,
            result: None,
            attempt: 0,
            next_attempt_at: None,
            wake_at: Some(wake_at),
            last_error: None,
            seq,
            created_at: now,
            completed_at: None,
        },
    };
    let recorded = cursor.journal.steps.contains_key(key);
    let due = row.wake_at.is_none_or(|at| at <= now);
    if !due && !cut {
        let writes = if recorded {
            vec![]
        } else {
            vec![Write::PutStep(row)]
        };
        return Ok(SleepReplay::Wait(writes));
    }
    let mut done = row;
    done.status = StepStatus::Completed;
    done.completed_at = Some(now);
    let mut writes = vec![Write::PutStep(done)];
    if cut {
        // The answer that asked for a sleep to be cut is spent on this one.
        writes.push(Write::ClearSleepCut);
    }
    Ok(SleepReplay::Done(writes))
}

/// What an `elicit` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElicitReplay {
    /// Answered: return this response (JSON text).
    Answered(String),
    /// The deadline passed first.
    TimedOut,
    /// Asked and not answered yet: stop and wait.
    Wait,
    /// New ground with a cancellation waiting: stop.
    Cancelled,
    /// New ground: record the request with [`elicit_writes`], then stop and wait.
    Ask,
}

/// Decides what the elicitation under `key` does.
pub fn replay_elicit(cursor: &Cursor<'_>, key: &str) -> Result<ElicitReplay, EngineError> {
    Ok(match cursor.input(key, StepKind::Elicit)? {
        Some(row) if row.timed_out => ElicitReplay::TimedOut,
        Some(row) if row.answered => {
            ElicitReplay::Answered(row.response.clone().unwrap_or_else(|| "null".to_owned()))
        }
        Some(_) => ElicitReplay::Wait,
        None if cursor.cancel_requested => ElicitReplay::Cancelled,
        None => ElicitReplay::Ask,
    })
}

/// The writes that record an elicitation and move the task to `input_required`.
pub fn elicit_writes(
    cursor: &Cursor<'_>,
    key: &str,
    request: String,
    timeout_at: Option<Timestamp>,
    seq: u64,
) -> Vec<Write> {
    let row = InputRow::unanswered(key, request, true, seq, cursor.now);
    let row = InputRow { timeout_at, ..row };
    vec![Write::PutInput(row), Write::AwaitInput { at: cursor.now }]
}

/// What an `offer` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OfferReplay {
    /// Offered before: the first request stands.
    Offered,
    /// New ground with a cancellation waiting: stop.
    Cancelled,
    /// New ground: record the offer with [`offer_write`].
    Offer,
}

/// Decides what the offer under `key` does.
pub fn replay_offer(cursor: &Cursor<'_>, key: &str) -> Result<OfferReplay, EngineError> {
    Ok(match cursor.input(key, StepKind::Offer)? {
        Some(_) => OfferReplay::Offered,
        None if cursor.cancel_requested => OfferReplay::Cancelled,
        None => OfferReplay::Offer,
    })
}

/// The write that records a standing offer.
pub fn offer_write(cursor: &Cursor<'_>, key: &str, request: String, seq: u64) -> Write {
    Write::PutInput(InputRow::unanswered(key, request, false, seq, cursor.now))
}

/// What a `check_input` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckReplay {
    /// Recorded: return what the check saw then (JSON text, `None` for no answer).
    Seen(Option<String>),
    /// New ground with a cancellation waiting: stop.
    Cancelled,
    /// New ground: read the offer fresh and record with [`check_writes`].
    Read,
}

/// Decides what the check under `step_key` does.
pub fn replay_check(cursor: &Cursor<'_>, step_key: &str) -> Result<CheckReplay, EngineError> {
    Ok(match cursor.step(step_key, StepKind::Check)? {
        Some(row) => CheckReplay::Seen(row.result.clone().filter(|text| text != "null")),
        None if cursor.cancel_requested => CheckReplay::Cancelled,
        None => CheckReplay::Read,
    })
}

/// Takes the answer of the offer under `key` (read fresh as `offer`), if one is waiting, and
/// journals what was seen under `step_key`. Returns the answer and the writes.
pub fn check_writes(
    cursor: &Cursor<'_>,
    step_key: &str,
    key: &str,
    offer: Option<InputRow>,
    seq: u64,
) -> Result<(Option<String>, Vec<Write>), EngineError> {
    let no_offer = |reason| EngineError::NoOffer {
        key: key.to_owned(),
        reason,
    };
    let mut writes = Vec::with_capacity(2);
    let answer = match offer {
        None => return Err(no_offer("no offer is registered under it")),
        Some(row) if row.blocking => {
            return Err(no_offer("it is an elicitation, which cx.elicit reads"));
        }
        Some(mut row) if row.answered && !row.consumed => {
            row.consumed = true;
            let answer = row.response.clone();
            writes.push(Write::PutInput(row));
            answer
        }
        Some(_) => None,
    };
    writes.push(Write::PutStep(StepRow {
        key: step_key.to_owned(),
        kind: StepKind::Check,
        status: StepStatus::Completed,
        result: Some(answer.clone().unwrap_or_else(|| "null".to_owned())),
        attempt: 0,
        next_attempt_at: None,
        wake_at: None,
        last_error: None,
        seq,
        created_at: cursor.now,
        completed_at: Some(cursor.now),
    }));
    Ok((answer, writes))
}

/// Whether the `ordinal`-th `status` call of this run is new ground (earlier runs published
/// up to `status_published`), so that replays never publish an old message again.
pub fn publishes_status(cursor: &Cursor<'_>, ordinal: u32) -> bool {
    ordinal > cursor.journal.task.status_published
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::core::control::test_task;
    use crate::core::retry::Backoff;

    const NOW: Timestamp = Timestamp(50_000);

    /// A canned journal: the task row plus the given rows.
    fn journal(steps: Vec<StepRow>, inputs: Vec<InputRow>) -> TaskState {
        TaskState {
            task: test_task(Timestamp(0), None),
            steps: steps.into_iter().map(|s| (s.key.clone(), s)).collect(),
            inputs: inputs.into_iter().map(|i| (i.key.clone(), i)).collect(),
        }
    }

    fn cursor(journal: &TaskState) -> Cursor<'_> {
        Cursor {
            journal,
            now: NOW,
            cancel_requested: false,
        }
    }

    fn row(key: &str, kind: StepKind, status: StepStatus) -> StepRow {
        StepRow {
            key: key.into(),
            kind,
            status,
            result: None,
            attempt: 1,
            next_attempt_at: None,
            wake_at: None,
            last_error: None,
            seq: 1,
            created_at: Timestamp(0),
            completed_at: None,
        }
    }

    fn policy(limit: u32) -> RetryPolicy {
        RetryPolicy {
            limit,
            delay: Duration::from_secs(1),
            backoff: Backoff::Exponential,
            max_delay: Duration::from_secs(60),
            jitter: false,
        }
    }

    #[test]
    fn a_recorded_step_returns_its_value() {
        let mut done = row("a", StepKind::Do, StepStatus::Completed);
        done.result = Some("[1,2]".into());
        let j = journal(vec![done], vec![]);
        assert_eq!(
            replay_step(&cursor(&j), "a"),
            Ok(StepReplay::Value("[1,2]".into()))
        );
    }

    #[test]
    fn a_miss_runs_attempt_one_unless_cancelled() {
        let j = journal(vec![], vec![]);
        assert_eq!(
            replay_step(&cursor(&j), "a"),
            Ok(StepReplay::Run { attempt: 1 })
        );
        let cancelled = Cursor {
            cancel_requested: true,
            ..cursor(&j)
        };
        assert_eq!(replay_step(&cancelled, "a"), Ok(StepReplay::Cancelled));
    }

    #[test]
    fn a_cancel_does_not_stop_recorded_ground() {
        let mut done = row("a", StepKind::Do, StepStatus::Completed);
        done.result = Some("1".into());
        let j = journal(vec![done], vec![]);
        let cancelled = Cursor {
            cancel_requested: true,
            ..cursor(&j)
        };
        assert_eq!(
            replay_step(&cancelled, "a"),
            Ok(StepReplay::Value("1".into()))
        );
    }

    #[test]
    fn a_pending_retry_waits_until_due_then_claims_the_next_attempt() {
        let mut pending = row("a", StepKind::Do, StepStatus::Pending);
        pending.attempt = 2;
        pending.next_attempt_at = Some(Timestamp(NOW.0 + 1));
        let j = journal(vec![pending.clone()], vec![]);
        assert_eq!(replay_step(&cursor(&j), "a"), Ok(StepReplay::Wait));
        pending.next_attempt_at = Some(NOW);
        let j = journal(vec![pending], vec![]);
        assert_eq!(
            replay_step(&cursor(&j), "a"),
            Ok(StepReplay::Run { attempt: 3 })
        );
    }

    #[test]
    fn a_recorded_failure_is_returned_again() {
        let failure = StepFailure {
            kind: StepFailureKind::NonRetryable,
            attempts: 1,
            message: "no".into(),
        };
        let mut failed = row("a", StepKind::Do, StepStatus::Failed);
        failed.result = Some(failure.to_json());
        let j = journal(vec![failed], vec![]);
        assert_eq!(
            replay_step(&cursor(&j), "a"),
            Ok(StepReplay::Failed(failure))
        );
    }

    #[test]
    fn another_kind_under_the_key_is_non_determinism() {
        let j = journal(
            vec![row("a", StepKind::Sleep, StepStatus::Completed)],
            vec![],
        );
        let error = replay_step(&cursor(&j), "a").unwrap_err();
        assert_eq!(
            error,
            EngineError::Nondeterminism {
                key: "a".into(),
                recorded: StepKind::Sleep,
                requested: StepKind::Do,
            }
        );
        let mut offer = InputRow::unanswered("b", "{}".into(), false, 2, Timestamp(0));
        let j = journal(vec![], vec![offer.clone()]);
        assert!(replay_elicit(&cursor(&j), "b").is_err());
        offer.blocking = true;
        let j = journal(vec![], vec![offer]);
        assert!(replay_offer(&cursor(&j), "b").is_err());
        assert!(replay_check(&cursor(&j), "b").is_err());
    }

    #[test]
    fn attempts_retry_with_backoff_then_fail_for_good() {
        let j = journal(vec![], vec![]);
        let error = |retryable, timed_out| AttemptResult::Error {
            message: "boom".into(),
            retryable,
            timed_out,
        };
        let (row, after) = record_attempt(&cursor(&j), "a", 2, error(true, false), &policy(3), 9);
        assert_eq!(after, AfterAttempt::RetryAt(Timestamp(NOW.0 + 2_000)));
        assert_eq!(
            (row.status, row.attempt, row.seq),
            (StepStatus::Pending, 2, 9)
        );
        let (row, after) = record_attempt(&cursor(&j), "a", 3, error(true, true), &policy(3), 9);
        assert_eq!(row.status, StepStatus::Failed);
        let AfterAttempt::Failed(failure) = after else {
            panic!("expected a final failure");
        };
        assert_eq!(
            (failure.kind, failure.attempts),
            (StepFailureKind::TimedOut, 3)
        );
        assert_eq!(StepFailure::of_row(&row), failure);
        let (_, after) = record_attempt(&cursor(&j), "a", 1, error(false, false), &policy(3), 9);
        assert!(
            matches!(after, AfterAttempt::Failed(f) if f.kind == StepFailureKind::NonRetryable)
        );
    }

    #[test]
    fn a_retried_step_keeps_its_sequence_number() {
        let mut pending = row("a", StepKind::Do, StepStatus::Pending);
        pending.seq = 4;
        let j = journal(vec![pending], vec![]);
        let value = AttemptResult::Value("7".into());
        let (row, after) = record_attempt(&cursor(&j), "a", 2, value, &policy(3), 99);
        assert_eq!(
            (row.seq, row.result.as_deref(), after),
            (4, Some("7"), AfterAttempt::Completed)
        );
    }

    #[test]
    fn sleeps_record_wait_and_complete() {
        let j = journal(vec![], vec![]);
        let later = Timestamp(NOW.0 + 10);
        let SleepReplay::Wait(writes) = replay_sleep(&cursor(&j), "s", later, 3).unwrap() else {
            panic!("a new sleep waits");
        };
        let [Write::PutStep(recorded)] = writes.as_slice() else {
            panic!("one row");
        };
        assert_eq!(
            (recorded.wake_at, recorded.status),
            (Some(later), StepStatus::Pending)
        );
        let j = journal(vec![recorded.clone()], vec![]);
        assert_eq!(
            replay_sleep(&cursor(&j), "s", later, 4),
            Ok(SleepReplay::Wait(vec![]))
        );
        let due = Cursor {
            now: later,
            ..cursor(&j)
        };
        let SleepReplay::Done(writes) = replay_sleep(&due, "s", later, 4).unwrap() else {
            panic!("a due sleep completes");
        };
        assert!(matches!(&writes[..], [Write::PutStep(r)] if r.status == StepStatus::Completed));
    }

    #[test]
    fn a_cut_ends_the_sleep_and_spends_the_flag() {
        let mut j = journal(vec![], vec![]);
        j.task.cut_next_sleep = true;
        let later = Timestamp(NOW.0 + 10);
        let SleepReplay::Done(writes) = replay_sleep(&cursor(&j), "s", later, 3).unwrap() else {
            panic!("the cut sleep ends at once");
        };
        assert!(matches!(writes.last(), Some(Write::ClearSleepCut)));
    }

    #[test]
    fn elicitations_ask_wait_and_answer() {
        let j = journal(vec![], vec![]);
        assert_eq!(replay_elicit(&cursor(&j), "q"), Ok(ElicitReplay::Ask));
        let writes = elicit_writes(&cursor(&j), "q", "{}".into(), Some(Timestamp(9)), 5);
        let Write::PutInput(mut asked) = writes[0].clone() else {
            panic!("an input row first");
        };
        assert!(asked.blocking && asked.timeout_at == Some(Timestamp(9)));
        assert!(matches!(writes[1], Write::AwaitInput { .. }));
        let j = journal(vec![], vec![asked.clone()]);
        assert_eq!(replay_elicit(&cursor(&j), "q"), Ok(ElicitReplay::Wait));
        asked.answered = true;
        asked.response = Some(r#"{"action":"accept"}"#.into());
        let j = journal(vec![], vec![asked.clone()]);
        let answered = ElicitReplay::Answered(r#"{"action":"accept"}"#.into());
        assert_eq!(replay_elicit(&cursor(&j), "q"), Ok(answered));
        asked.timed_out = true;
        let j = journal(vec![], vec![asked]);
        assert_eq!(replay_elicit(&cursor(&j), "q"), Ok(ElicitReplay::TimedOut));
    }

    #[test]
    fn checks_take_an_answer_once_and_replay_what_they_saw() {
        let j = journal(vec![], vec![]);
        let offer = match offer_write(&cursor(&j), "k", "{}".into(), 1) {
            Write::PutInput(row) => row,
            other => panic!("{other:?}"),
        };
        let (answer, _) = check_writes(&cursor(&j), "peek", "k", Some(offer.clone()), 2).unwrap();
        assert_eq!(answer, None);
        let mut answered = offer;
        answered.answered = true;
        answered.response = Some("{}".into());
        let (answer, writes) =
            check_writes(&cursor(&j), "peek", "k", Some(answered.clone()), 2).unwrap();
        assert_eq!(answer.as_deref(), Some("{}"));
        assert!(matches!(&writes[0], Write::PutInput(r) if r.consumed));
        let Write::PutStep(seen) = writes[1].clone() else {
            panic!("a check row");
        };
        let j = journal(vec![seen], vec![]);
        assert_eq!(
            replay_check(&cursor(&j), "peek"),
            Ok(CheckReplay::Seen(Some("{}".into())))
        );
        assert!(check_writes(&cursor(&j), "p", "missing", None, 3).is_err());
    }

    #[test]
    fn only_status_calls_past_the_published_ordinal_publish() {
        let mut j = journal(vec![], vec![]);
        j.task.status_published = 2;
        assert!(!publishes_status(&cursor(&j), 2));
        assert!(publishes_status(&cursor(&j), 3));
    }
}
