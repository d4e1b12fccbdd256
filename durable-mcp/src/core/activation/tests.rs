use std::time::Duration;

use serde_json::json;

use super::*;
use crate::core::control::test_task;
use crate::core::journal::{Applied, InputRow, StepStatus};
use crate::core::outcome::End;
use crate::core::retry::Backoff;
use crate::core::step_failure::StepFailureKind;

const NOW: Timestamp = Timestamp(50_000);

const SETTINGS: Settings = Settings {
    retry: RetryPolicy::DEFAULT,
    step_timeout: Duration::from_secs(30),
    limits: Limits::DEFAULT,
    hand_off_at: None,
};

/// An activation of a journal holding the task row plus the given rows.
fn replaying(steps: Vec<StepRow>, inputs: Vec<InputRow>) -> Activation {
    let journal = TaskState {
        task: test_task(Timestamp(0), None),
        steps: steps.into_iter().map(|s| (s.key.clone(), s)).collect(),
        inputs: inputs.into_iter().map(|i| (i.key.clone(), i)).collect(),
    };
    Activation::new(journal, SETTINGS)
}

fn activation() -> Activation {
    replaying(vec![], vec![])
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

fn ok(value: &str) -> AttemptResult {
    AttemptResult::Value(value.to_owned())
}

fn error(retryable: bool, timed_out: bool) -> AttemptResult {
    AttemptResult::Error {
        message: "boom".into(),
        retryable,
        timed_out,
    }
}

fn form() -> Serialised {
    Ok(json!({
        "message": "ok?",
        "requestedSchema": { "type": "object", "properties": {} }
    }))
}

/// The attempt the machine issues for a new step under `key`.
fn run(m: &mut Activation, key: &str, retry: Option<RetryPolicy>) -> Attempt {
    match m.step(key, retry, None, NOW) {
        Ok(StepNext::Run(attempt)) => attempt,
        other => panic!("expected an attempt to run, got {other:?}"),
    }
}

fn applied(m: &mut Activation) {
    m.take_writes();
    m.committed(Ok(Applied::Done {
        cancel_requested: false,
    }))
    .unwrap();
}

fn suspension(m: &Activation) -> Option<Suspension> {
    m.end().map(|end| end.suspension)
}

fn failure(m: &Activation) -> EngineError {
    match suspension(m) {
        Some(Suspension::Fail(error)) => error,
        other => panic!("expected the task to fail, got {other:?}"),
    }
}

// ---- names ----

#[test]
fn keys_follow_the_order_of_calls() {
    let mut m = activation();
    assert_eq!(m.idempotency_key("send"), "t:send");
    assert_eq!(m.claim("send", NameUse::Step), Ok("send".to_owned()));
    assert_eq!(m.idempotency_key("send"), "t:send#2");
    assert_eq!(m.claim("send", NameUse::Step), Ok("send#2".to_owned()));
    assert_eq!(m.claim("other", NameUse::Step), Ok("other".to_owned()));
}

#[test]
fn another_kind_under_the_key_is_non_determinism() {
    let mut m = replaying(
        vec![row("a", StepKind::Sleep, StepStatus::Completed)],
        vec![],
    );
    assert_eq!(m.step("a", None, None, NOW), Err(Stop));
    assert_eq!(
        failure(&m),
        EngineError::Nondeterminism {
            key: "a".into(),
            recorded: StepKind::Sleep,
            requested: StepKind::Do,
        }
    );
    let mut offer = InputRow::unanswered("b", "{}".into(), false, 2, Timestamp(0));
    let mut m = replaying(vec![], vec![offer.clone()]);
    assert_eq!(m.elicit("b", form(), None, NOW), Err(Stop));
    assert!(matches!(failure(&m), EngineError::Nondeterminism { .. }));
    offer.blocking = true;
    let mut m = replaying(vec![], vec![offer.clone()]);
    assert_eq!(m.offer("b", form(), NOW), Err(Stop));
    assert!(matches!(failure(&m), EngineError::Nondeterminism { .. }));
    let mut m = replaying(vec![], vec![offer]);
    assert_eq!(m.check("b"), Err(Stop));
    assert!(matches!(failure(&m), EngineError::Nondeterminism { .. }));
}

// ---- steps ----

#[test]
fn a_recorded_step_returns_its_value() {
    let mut done = row("a", StepKind::Do, StepStatus::Completed);
    done.result = Some("[1,2]".into());
    let mut m = replaying(vec![done], vec![]);
    assert_eq!(
        m.step("a", None, None, NOW),
        Ok(StepNext::Replay("[1,2]".into()))
    );
}

#[test]
fn a_miss_runs_attempt_one_unless_cancelled() {
    let mut m = activation();
    assert_eq!(run(&mut m, "a", None).number, 1);
    let mut m = activation();
    m.cancel_requested = true;
    assert_eq!(m.step("a", None, None, NOW), Err(Stop));
    assert_eq!(suspension(&m), Some(Suspension::Cancelled));
}

#[test]
fn a_cancel_does_not_stop_recorded_ground() {
    let mut done = row("a", StepKind::Do, StepStatus::Completed);
    done.result = Some("1".into());
    let mut m = replaying(vec![done], vec![]);
    m.cancel_requested = true;
    assert_eq!(
        m.step("a", None, None, NOW),
        Ok(StepNext::Replay("1".into()))
    );
    assert_eq!(m.end(), None);
}

#[test]
fn a_pending_retry_waits_until_due_then_runs_the_next_attempt() {
    let mut pending = row("a", StepKind::Do, StepStatus::Pending);
    pending.attempt = 2;
    pending.next_attempt_at = Some(Timestamp(NOW.0 + 1));
    let mut m = replaying(vec![pending.clone()], vec![]);
    assert_eq!(m.step("a", None, None, NOW), Err(Stop));
    assert_eq!(suspension(&m), Some(Suspension::Wait));
    pending.next_attempt_at = Some(NOW);
    let mut m = replaying(vec![pending], vec![]);
    assert_eq!(run(&mut m, "a", None).number, 3);
}

#[test]
fn a_recorded_failure_is_returned_again() {
    let recorded = StepFailure {
        kind: StepFailureKind::NonRetryable,
        attempts: 1,
        message: "no".into(),
    };
    let mut failed = row("a", StepKind::Do, StepStatus::Failed);
    failed.result = Some(recorded.to_json());
    let mut m = replaying(vec![failed], vec![]);
    assert_eq!(m.step("a", None, None, NOW), Ok(StepNext::Failed(recorded)));
}

#[test]
fn an_attempt_runs_under_the_step_options_or_the_task_defaults() {
    let mut m = activation();
    assert_eq!(run(&mut m, "a", None).timeout, SETTINGS.step_timeout);
    let short = Duration::from_millis(5);
    let attempt = m.step("b", None, Some(short), NOW);
    assert!(matches!(attempt, Ok(StepNext::Run(a)) if a.timeout == short));
    // The step's own policy decides its retries: one attempt, then it fails for good.
    let c = run(&mut m, "c", Some(policy(1)));
    let end = m.attempt_done(c.id, error(true, false), NOW);
    assert!(matches!(end, Ok(StepEnd::Failed(f)) if f.kind == StepFailureKind::AttemptsExhausted));
    let bad = RetryPolicy {
        limit: 0,
        ..policy(1)
    };
    assert_eq!(m.step("d", Some(bad), None, NOW), Err(Stop));
    assert!(matches!(failure(&m), EngineError::InvalidPolicy { what, .. } if what == "step \"d\""));
}

#[test]
fn attempts_retry_with_backoff_then_fail_for_good() {
    // Attempt 2 of 3 fails: retried after the exponential delay.
    let mut pending = row("a", StepKind::Do, StepStatus::Pending);
    pending.seq = 9;
    let mut m = replaying(vec![pending.clone()], vec![]);
    let attempt = run(&mut m, "a", Some(policy(3)));
    assert_eq!(attempt.number, 2);
    assert_eq!(
        m.attempt_done(attempt.id, error(true, false), NOW),
        Err(Stop)
    );
    let retried = &m.journal().steps["a"];
    assert_eq!(
        (retried.status, retried.attempt, retried.seq),
        (StepStatus::Pending, 2, 9)
    );
    assert_eq!(retried.next_attempt_at, Some(Timestamp(NOW.0 + 2_000)));
    assert_eq!(suspension(&m), Some(Suspension::Wait));
    // Attempt 3 of 3 times out: no attempt is left.
    pending.attempt = 2;
    let mut m = replaying(vec![pending], vec![]);
    let attempt = run(&mut m, "a", Some(policy(3)));
    let Ok(StepEnd::Failed(failed)) = m.attempt_done(attempt.id, error(true, true), NOW) else {
        panic!("expected a final failure");
    };
    assert_eq!(
        (failed.kind, failed.attempts),
        (StepFailureKind::TimedOut, 3)
    );
    let recorded = &m.journal().steps["a"];
    assert_eq!(recorded.status, StepStatus::Failed);
    assert_eq!(StepFailure::of_row(recorded), failed);
    // A non-retryable error fails at once.
    let mut m = activation();
    let attempt = run(&mut m, "a", Some(policy(3)));
    let end = m.attempt_done(attempt.id, error(false, false), NOW);
    assert!(matches!(end, Ok(StepEnd::Failed(f)) if f.kind == StepFailureKind::NonRetryable));
}

#[test]
fn a_retried_step_keeps_its_sequence_number() {
    let mut pending = row("a", StepKind::Do, StepStatus::Pending);
    pending.seq = 4;
    let mut m = replaying(vec![pending], vec![]);
    let attempt = run(&mut m, "a", Some(policy(3)));
    assert_eq!(
        m.attempt_done(attempt.id, ok("7"), NOW),
        Ok(StepEnd::Completed)
    );
    let row = &m.journal().steps["a"];
    assert_eq!((row.seq, row.result.as_deref()), (4, Some("7")));
}

#[test]
fn the_activation_sees_its_own_writes() {
    let mut m = activation();
    let key = m.claim("a", NameUse::Step).unwrap();
    let attempt = run(&mut m, &key, None);
    m.attempt_done(attempt.id, ok("7"), NOW).unwrap();
    let row = &m.journal().steps["a"];
    assert_eq!(
        (row.kind, row.status, row.result.as_deref()),
        (StepKind::Do, StepStatus::Completed, Some("7"))
    );
    // A recorded key asked for as another kind is non-determinism, also within one run.
    assert_eq!(m.sleep_until("a", NOW, NOW), Err(Stop));
    assert!(matches!(failure(&m), EngineError::Nondeterminism { .. }));
}

#[test]
fn an_answer_to_an_attempt_not_running_fails_the_task() {
    // Answered twice.
    let mut m = activation();
    let attempt = run(&mut m, "a", None);
    assert_eq!(
        m.attempt_done(attempt.id, ok("1"), NOW),
        Ok(StepEnd::Completed)
    );
    assert_eq!(m.attempt_done(attempt.id, ok("2"), NOW), Err(Stop));
    let attempt_number = attempt.id.number();
    assert_eq!(
        failure(&m),
        EngineError::UnknownAttempt {
            attempt: attempt_number
        }
    );
    assert_eq!(m.journal().steps["a"].result.as_deref(), Some("1"));
    // Abandoned after it was answered.
    let mut m = activation();
    let attempt = run(&mut m, "a", None);
    m.attempt_done(attempt.id, ok("1"), NOW).unwrap();
    m.attempt_abandoned(attempt.id);
    assert!(matches!(failure(&m), EngineError::UnknownAttempt { .. }));
    // Each attempt is answered by its own id, whatever the order.
    let mut m = activation();
    let a = run(&mut m, "a", None);
    let b = run(&mut m, "b", None);
    assert_ne!(a.id, b.id);
    m.attempt_done(b.id, ok("2"), NOW).unwrap();
    m.attempt_abandoned(a.id);
    assert_eq!(m.end(), None);
    assert_eq!(m.journal().steps.keys().collect::<Vec<_>>(), ["b"]);
}

#[test]
fn a_journal_call_inside_a_step_closure_fails_the_task() {
    let mut m = activation();
    let key = m.claim("outer", NameUse::Step).unwrap();
    let attempt = run(&mut m, &key, None);
    m.enter_closure(&key);
    assert_eq!(m.claim("inner", NameUse::Step), Err(Stop));
    m.leave_closure();
    m.attempt_abandoned(attempt.id);
    assert!(matches!(
        failure(&m),
        EngineError::NestedStep { ref outer, ref inner } if outer == "outer" && inner == "inner"
    ));
}

#[test]
fn running_attempts_finish_after_a_sibling_suspends() {
    let mut m = activation();
    let a = m.claim("a", NameUse::Step).unwrap();
    let b = m.claim("b", NameUse::Step).unwrap();
    let a = run(&mut m, &a, None);
    let b = run(&mut m, &b, None);
    // `a` fails and waits for its retry; `b` is still running.
    assert_eq!(m.attempt_done(a.id, error(true, false), NOW), Err(Stop));
    applied(&mut m);
    assert_eq!(m.end(), None, "b is still running");
    // Other branches go on while one waits.
    let c = m.claim("c", NameUse::Step).unwrap();
    let c = run(&mut m, &c, None);
    m.attempt_abandoned(c.id);
    // `b` finishes and is recorded; the body runs again at once to see it.
    assert_eq!(m.attempt_done(b.id, ok("2"), NOW), Ok(StepEnd::Completed));
    let writes = m.take_writes();
    assert!(matches!(&writes[..], [Write::PutStep(row)] if row.key == "b"));
    let end = m.end().expect("nothing runs any more");
    assert_eq!(
        end,
        End {
            suspension: Suspension::Wait,
            rerun: true
        }
    );
}

#[test]
fn a_cancel_ends_the_activation_without_waiting_for_attempts() {
    let mut m = activation();
    let a = m.claim("a", NameUse::Step).unwrap();
    run(&mut m, &a, None);
    m.cancel_requested = true;
    let b = m.claim("b", NameUse::Step).unwrap();
    assert_eq!(m.step(&b, None, None, NOW), Err(Stop));
    assert_eq!(suspension(&m), Some(Suspension::Cancelled));
}

// ---- the end ----

#[test]
fn the_weightiest_reason_to_stop_stands() {
    let mut m = activation();
    m.suspend(Suspension::Wait);
    m.fail(EngineError::StaleLease {
        task_id: "t".into(),
    });
    m.suspend(Suspension::Wait);
    assert!(matches!(suspension(&m), Some(Suspension::Fail(_))));
    // A hand-off breaks no new ground.
    let mut m = activation();
    m.suspend(Suspension::HandOff);
    let key = m.claim("a", NameUse::Step).unwrap();
    assert_eq!(m.step(&key, None, None, NOW), Err(Stop));
}

#[test]
fn a_lost_lease_stops_the_body() {
    let mut m = activation();
    assert_eq!(m.committed(Ok(Applied::Stale)), Err(Stop));
    assert_eq!(suspension(&m), Some(Suspension::Stale));
    let mut m = activation();
    m.settings.hand_off_at = Some(NOW);
    let key = m.claim("a", NameUse::Step).unwrap();
    assert_eq!(m.step(&key, None, None, NOW), Err(Stop));
    assert_eq!(suspension(&m), Some(Suspension::HandOff));
}

// ---- sleeps ----

#[test]
fn sleeps_record_wait_and_complete() {
    let later = Timestamp(NOW.0 + 10);
    let mut m = activation();
    assert_eq!(m.sleep("s", Ok(Duration::from_millis(10)), NOW), Err(Stop));
    let writes = m.take_writes();
    let [Write::PutStep(recorded)] = writes.as_slice() else {
        panic!("one row");
    };
    assert_eq!(
        (recorded.wake_at, recorded.status),
        (Some(later), StepStatus::Pending)
    );
    // Recorded and not due: waits, writing nothing.
    let mut m = replaying(vec![recorded.clone()], vec![]);
    assert_eq!(m.sleep_until("s", later, NOW), Err(Stop));
    assert!(m.take_writes().is_empty());
    assert_eq!(suspension(&m), Some(Suspension::Wait));
    // Due: completes.
    let mut m = replaying(vec![recorded.clone()], vec![]);
    assert_eq!(m.sleep_until("s", later, later), Ok(()));
    let writes = m.take_writes();
    assert!(matches!(&writes[..], [Write::PutStep(r)] if r.status == StepStatus::Completed));
}

#[test]
fn a_sleep_ends_at_the_latest_time_a_host_can_store() {
    let mut m = activation();
    assert_eq!(m.sleep_until("s", Timestamp(u64::MAX), NOW), Err(Stop));
    assert_eq!(m.journal().steps["s"].wake_at, Some(Timestamp::MAX));
}

#[test]
fn a_malformed_duration_fails_the_task_at_its_sleep() {
    let mut m = activation();
    let malformed = crate::core::parse_duration("soon");
    assert_eq!(m.sleep("s", malformed, NOW), Err(Stop));
    assert!(matches!(
        failure(&m),
        EngineError::InvalidDuration { what, .. } if what == "the duration of sleep \"s\""
    ));
}

#[test]
fn an_offer_answer_cuts_only_the_next_sleep() {
    let mut m = activation();
    m.journal.task.cut_next_sleep = true;
    let later = Timestamp(NOW.0 + 10_000);
    assert_eq!(m.sleep_until("first", later, NOW), Ok(()));
    let writes = m.take_writes();
    assert!(matches!(writes.last(), Some(Write::ClearSleepCut)));
    // The cut is spent: the second sleep of the same activation waits.
    assert_eq!(m.sleep_until("second", later, NOW), Err(Stop));
    assert_eq!(suspension(&m), Some(Suspension::Wait));
}

// ---- input ----

#[test]
fn elicitations_ask_wait_and_answer() {
    let mut m = activation();
    let timeout = Duration::from_secs(9);
    assert_eq!(m.elicit("q", form(), Some(timeout), NOW), Err(Stop));
    assert_eq!(suspension(&m), Some(Suspension::Wait));
    let writes = m.take_writes();
    let [Write::PutInput(asked), Write::AwaitInput { .. }] = writes.as_slice() else {
        panic!("an input row, then input_required: {writes:?}");
    };
    assert!(asked.blocking && asked.timeout_at == Some(Timestamp(NOW.0 + 9_000)));
    let mut asked = asked.clone();
    let mut m = replaying(vec![], vec![asked.clone()]);
    assert_eq!(m.elicit("q", form(), Some(timeout), NOW), Err(Stop));
    assert!(m.take_writes().is_empty(), "asked once");
    asked.answered = true;
    asked.response = Some(r#"{"action":"accept"}"#.into());
    let mut m = replaying(vec![], vec![asked.clone()]);
    let answered = ElicitNext::Answered(r#"{"action":"accept"}"#.into());
    assert_eq!(m.elicit("q", form(), Some(timeout), NOW), Ok(answered));
    asked.timed_out = true;
    let mut m = replaying(vec![], vec![asked]);
    assert_eq!(
        m.elicit("q", form(), Some(timeout), NOW),
        Ok(ElicitNext::TimedOut)
    );
}

#[test]
fn an_elicitation_that_timed_out_asked_without_a_timeout_is_non_determinism() {
    let mut timed_out = InputRow::unanswered("q", "{}".into(), true, 1, Timestamp(0));
    timed_out.timeout_at = Some(Timestamp(10));
    (timed_out.answered, timed_out.timed_out) = (true, true);
    let mut m = replaying(vec![], vec![timed_out]);
    assert_eq!(m.elicit("q", form(), None, NOW), Err(Stop));
    let error = failure(&m);
    assert_eq!(error, EngineError::ElicitTimeoutRemoved { key: "q".into() });
    let message = error.to_string();
    assert!(message.contains("\"q\"") && message.contains(".timeout("));
}

#[test]
fn an_unusable_input_request_fails_the_task_where_it_is_asked() {
    let mut m = activation();
    assert_eq!(
        m.elicit("q", Ok(json!({ "text": "ok?" })), None, NOW),
        Err(Stop)
    );
    assert!(matches!(failure(&m), EngineError::UnusableInputRequest { key, .. } if key == "q"));
    assert!(m.take_writes().is_empty());
    // Offered before: the first request stands, and the new one is not looked at.
    let offered = InputRow::unanswered("k", "{}".into(), false, 1, Timestamp(0));
    let mut m = replaying(vec![], vec![offered]);
    assert_eq!(m.offer("k", Ok(json!(null)), NOW), Ok(()));
    assert_eq!(m.end(), None);
}

#[test]
fn checks_take_an_answer_once_and_replay_what_they_saw() {
    let mut m = activation();
    m.offer("k", form(), NOW).unwrap();
    let offer = m.journal().inputs["k"].clone();
    assert_eq!(m.check("peek"), Ok(CheckNext::Read));
    let answer = m.record_check("peek", "k", Some(offer.clone()), NOW);
    assert_eq!(answer, Ok(None));
    let mut answered = offer;
    answered.answered = true;
    answered.response = Some("{}".into());
    m.take_writes();
    let answer = m.record_check("peek#2", "k", Some(answered), NOW);
    assert_eq!(answer, Ok(Some("{}".into())));
    let writes = m.take_writes();
    assert!(matches!(&writes[0], Write::PutInput(r) if r.consumed));
    let Write::PutStep(seen) = writes[1].clone() else {
        panic!("a check row");
    };
    let mut m = replaying(vec![seen], vec![]);
    assert_eq!(m.check("peek#2"), Ok(CheckNext::Seen(Some("{}".into()))));
    assert_eq!(m.record_check("p", "missing", None, NOW), Err(Stop));
    assert!(matches!(failure(&m), EngineError::NoOffer { .. }));
}

// ---- status ----

#[test]
fn status_calls_are_numbered_at_the_call_and_published_once() {
    let mut m = activation();
    m.journal.task.status_published = 1;
    let first = m.status_call().unwrap();
    let second = m.status_call().unwrap();
    assert_eq!((first, second), (1, 2));
    m.publish(first, "old".into(), None, NOW).unwrap();
    assert!(m.take_writes().is_empty(), "published by an earlier run");
    m.publish(second, "new".into(), None, NOW).unwrap();
    assert_eq!(m.take_writes().len(), 1);
}

#[test]
fn a_status_meta_past_its_limit_fails_the_task_even_when_replayed() {
    let mut m = activation();
    m.journal.task.status_published = 1;
    let ordinal = m.status_call().unwrap();
    let big = json!({ "blob": "x".repeat(Limits::DEFAULT.max_status_meta_bytes) });
    assert_eq!(
        m.publish(ordinal, "old".into(), Some(Ok(big)), NOW),
        Err(Stop)
    );
    assert!(matches!(failure(&m), EngineError::InvalidStatusMeta { .. }));
}

// ---- values the context records ----

/// An activation replaying what `first` recorded (its journal as it changed it).
fn replay_of(first: &Activation) -> Activation {
    Activation::new(first.journal().clone(), SETTINGS)
}

fn own_rows(m: &Activation) -> Vec<(String, String)> {
    let mut rows: Vec<_> = m
        .journal()
        .steps
        .values()
        .filter(|row| row.kind == StepKind::Value)
        .map(|row| (row.key.clone(), row.result.clone().unwrap_or_default()))
        .collect();
    rows.sort();
    rows
}

#[test]
fn clock_readings_are_recorded_in_call_order_and_replayed() {
    let mut first = activation();
    assert_eq!(first.now(Timestamp(100)), Timestamp(100));
    assert_eq!(first.now(Timestamp(200)), Timestamp(200));
    let writes = first.take_writes();
    assert_eq!(
        writes.len(),
        2,
        "queued for the next write, not flushed alone"
    );
    assert_eq!(
        own_rows(&first),
        [
            ("$now".into(), "100".into()),
            ("$now#2".into(), "200".into())
        ]
    );
    let mut replay = replay_of(&first);
    assert_eq!(replay.now(Timestamp(900)), Timestamp(100));
    assert_eq!(replay.now(Timestamp(900)), Timestamp(200));
    assert_eq!(
        replay.now(Timestamp(900)),
        Timestamp(900),
        "new ground reads the clock"
    );
    assert_eq!(replay.take_writes().len(), 1);
}

#[test]
fn random_draws_follow_the_seed_the_first_draw_records() {
    let mut first = activation();
    let drawn: Vec<u64> = (0..3).map(|_| first.random(|| Ok(42), NOW)).collect();
    assert_eq!(own_rows(&first).len(), 1, "one seed for every draw");
    assert_eq!(own_rows(&first)[0].0, "$random");
    let mut replay = replay_of(&first);
    let seed_unused = || -> Result<u128, String> { panic!("the recorded seed is used") };
    let again: Vec<u64> = (0..4).map(|_| replay.random(seed_unused, NOW)).collect();
    assert_eq!(again[..3], drawn[..]);
    assert!(replay.take_writes().is_empty());
    let other: Vec<u64> = (0..3)
        .map(|_| activation().random(|| Ok(43), NOW))
        .collect();
    assert_ne!(other, drawn);
}

#[test]
fn a_failed_random_source_fails_the_task() {
    let mut m = activation();
    m.random(|| Err("no entropy".into()), NOW);
    let end = m.end().expect("ended");
    assert!(
        matches!(&end.suspension, Suspension::Fail(EngineError::Store(message)) if message.contains("no entropy")),
        "{end:?}"
    );
}

#[test]
fn a_patch_gate_is_new_for_a_task_that_reaches_it_and_old_for_one_already_past() {
    // A task created on the new code: nothing recorded lies ahead.
    let mut new = activation();
    assert!(new.patched("tax", NOW));
    assert_eq!(own_rows(&new), [("$patch:tax".into(), "true".into())]);

    // A task that ran `a` and then `b` on the old code, which had no gate between them.
    let old_rows = vec![
        row("a", StepKind::Do, StepStatus::Completed),
        row("b", StepKind::Do, StepStatus::Completed),
    ];
    let mut old = replaying(old_rows.clone(), vec![]);
    assert!(matches!(
        old.step("a", None, None, NOW),
        Ok(StepNext::Replay(_))
    ));
    assert!(
        !old.patched("tax", NOW),
        "`b` lies ahead: the task passed the gate"
    );
    // Its answer is recorded: a later replay agrees even once `b` is reached first.
    let mut later = replay_of(&old);
    assert!(matches!(
        later.step("a", None, None, NOW),
        Ok(StepNext::Replay(_))
    ));
    assert!(matches!(
        later.step("b", None, None, NOW),
        Ok(StepNext::Replay(_))
    ));
    assert!(!later.patched("tax", NOW));

    // A task that stopped before the gate on the old code takes the new side.
    let mut paused = replaying(old_rows[..1].to_vec(), vec![]);
    assert!(matches!(
        paused.step("a", None, None, NOW),
        Ok(StepNext::Replay(_))
    ));
    assert!(paused.patched("tax", NOW));
}

#[test]
fn the_context_own_records_do_not_count_as_ground_ahead() {
    let mut m = replaying(
        vec![row("$now", StepKind::Value, StepStatus::Completed)],
        vec![],
    );
    assert!(
        m.patched("first", NOW),
        "an unread clock reading is not a step ahead"
    );
}

#[test]
fn a_retired_patch_fails_a_task_that_took_its_old_side() {
    let mut new = activation();
    assert_eq!(new.retire_patch("tax", NOW), Ok(()));
    let mut old = replaying(vec![row("b", StepKind::Do, StepStatus::Completed)], vec![]);
    assert_eq!(old.retire_patch("tax", NOW), Err(Stop));
    let end = old.end().expect("ended");
    assert_eq!(
        end.suspension,
        Suspension::Fail(EngineError::RetiredPatch { id: "tax".into() })
    );
}

#[test]
fn the_body_cannot_name_a_step_like_the_context_own_records() {
    let mut m = activation();
    assert_eq!(m.claim("$now", NameUse::Step), Err(Stop));
    assert!(matches!(
        m.end().map(|end| end.suspension),
        Some(Suspension::Fail(EngineError::InvalidName { .. }))
    ));
}

#[test]
fn a_stopping_body_records_no_value() {
    let mut m = activation();
    m.suspend(Suspension::Cancelled);
    assert_eq!(m.now(Timestamp(7)), Timestamp(7));
    assert!(m.patched("p", NOW));
    m.random(|| Ok(1), NOW);
    assert!(m.take_writes().is_empty());
}
