//! Table tests of the tick machine: events in, commands out. No store, no clock, no async.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::core::journal::StepKind;
use crate::core::task::{TaskRecord, TaskStatus};
use crate::core::terminal::tool_error_result;
use crate::core::test_rows::{at, elicit, pending, state};

const LEASE: Duration = Duration::from_secs(60);

fn tick() -> Tick {
    Tick::new("t", LEASE, Limits::DEFAULT)
}

/// Steps of a tick: an event, when it happens, and the command the machine should answer.
type Script = Vec<(Event, Timestamp, Command)>;

/// Feeds `script`'s events in order, each at its time, and checks that each command the
/// machine gives is the expected one; returns how many loads the tick asked for.
fn play(mut tick: Tick, script: &[(Event, Timestamp, Command)]) -> usize {
    let mut command = tick.start();
    let mut loads = 1;
    for (step, (event, now, expected)) in script.iter().enumerate() {
        assert!(
            !matches!(command, Command::Sleep(_) | Command::Gone { .. }),
            "the tick ended before step {step}"
        );
        command = tick.handle(event.clone(), *now).expect("no error");
        assert_eq!(&command, expected, "step {step}: after {event:?}");
        loads += usize::from(matches!(command, Command::Load(_)));
    }
    assert!(
        matches!(command, Command::Sleep(_) | Command::Gone { .. }),
        "the script ends the tick"
    );
    loads
}

fn version_guard(task: &TaskRecord) -> Guard {
    Guard {
        version: Some(task.version),
        generation: None,
    }
}

fn put(task: &TaskRecord) -> Vec<Write> {
    vec![Write::PutTask(task.clone())]
}

fn applied(state: &TaskState, guard: Guard, writes: &[Write]) -> TaskState {
    let mut state = state.clone();
    assert_ne!(state.apply_guarded(guard, writes), Applied::Stale);
    state
}

fn done() -> Event {
    Event::Applied(Applied::Done {
        cancel_requested: false,
    })
}

/// A working task whose sleep ends at `at(500)`.
fn sleeping() -> TaskState {
    let mut s = state();
    s.steps
        .insert("nap".into(), pending("nap", StepKind::Sleep, at(500)));
    s
}

/// The claim of `s` at `now`, the journal it leaves, and the claim's write.
fn claimed(s: &TaskState, now: Timestamp) -> (TaskState, Command) {
    let mut task = s.task.clone();
    task.run_attempt += 1;
    task.generation += 1;
    task.next_run_at = Some(now.saturating_add(LEASE));
    task.run_cause = Some("lost-activation".into());
    let apply = Command::Apply {
        guard: version_guard(&s.task),
        writes: put(&task),
    };
    (applied(s, version_guard(&s.task), &put(&task)), apply)
}

/// The wake of a [`sleeping`] task at 500: its claim, its run, and the body's `outcome` at
/// 600, up to the read that settles it. Returns the journal the body ran on.
fn run_sleeping(outcome: BodyOutcome) -> (TaskState, Script) {
    let s = sleeping();
    let (journal, claim) = claimed(&s, at(500));
    let script = vec![
        (Event::Loaded(Some(s)), at(500), claim),
        (done(), at(500), Command::Run(journal.clone())),
        (
            Event::Ran(outcome),
            at(600),
            Command::Load(LoadScope::Control),
        ),
    ];
    (journal, script)
}

/// The settlement once the row reads `current`: `record` written under its version and lease,
/// then sleep until `wake`.
fn settle_on(current: &TaskState, record: &TaskRecord, wake: Option<Timestamp>) -> Script {
    vec![
        settlement_write(current, record),
        (done(), at(600), Command::Sleep(wake)),
    ]
}

/// The read of `current` that settles the body, and the write of `record` it leads to.
fn settlement_write(current: &TaskState, record: &TaskRecord) -> (Event, Timestamp, Command) {
    let guard = Guard {
        version: Some(current.task.version),
        generation: Some(current.task.generation),
    };
    let apply = Command::Apply {
        guard,
        writes: put(record),
    };
    (Event::Loaded(Some(current.clone())), at(600), apply)
}

fn wait() -> BodyOutcome {
    BodyOutcome::Stopped(End {
        suspension: Suspension::Wait,
        rerun: false,
    })
}

/// The purge time of [`state`]'s task once it finished before its deadline.
const PURGE: Option<Timestamp> = Some(at(3_600_000));

#[test]
fn a_missing_task_is_gone_after_one_load() {
    let loads = play(
        tick(),
        &[(
            Event::Loaded(None),
            at(0),
            Command::Gone { list_scope: None },
        )],
    );
    assert_eq!(loads, 1);
}

#[test]
fn nothing_due_sleeps_until_the_next_wake() {
    let s = sleeping();
    play(
        tick(),
        &[(
            Event::Loaded(Some(s)),
            at(100),
            Command::Sleep(Some(at(500))),
        )],
    );
}

#[test]
fn a_listed_task_past_its_retention_is_purged_and_its_index_told() {
    let mut s = state();
    s.task.list_scope = Some("principal:p".into());
    s.task.transition(TaskStatus::Completed, at(10));
    play(
        tick(),
        &[
            (Event::Loaded(Some(s)), at(3_600_000), Command::Purge),
            (
                Event::Purged,
                at(3_600_000),
                Command::Gone {
                    list_scope: Some("principal:p".into()),
                },
            ),
        ],
    );
}

#[test]
fn a_claim_that_lost_the_race_reads_the_task_again() {
    let s = sleeping();
    let (_, claim) = claimed(&s, at(500));
    let mut moved = s.clone();
    moved.task.version += 1;
    moved.task.transition(TaskStatus::Cancelled, at(500));
    play(
        tick(),
        &[
            (Event::Loaded(Some(s)), at(500), claim),
            (
                Event::Applied(Applied::Stale),
                at(500),
                Command::Load(LoadScope::Full),
            ),
            (
                Event::Loaded(Some(moved)),
                at(500),
                Command::Sleep(Some(at(3_600_000))),
            ),
        ],
    );
}

#[test]
fn control_writes_are_decided_on_again_without_a_load() {
    let mut s = sleeping();
    s.task.cancel_requested = true;
    let mut cancelled = s.task.clone();
    cancelled.transition(TaskStatus::Cancelled, at(100));
    cancelled.generation += 1;
    let loads = play(
        tick(),
        &[
            (
                Event::Loaded(Some(s.clone())),
                at(100),
                Command::Apply {
                    guard: version_guard(&s.task),
                    writes: put(&cancelled),
                },
            ),
            (done(), at(100), Command::Sleep(Some(at(3_600_000)))),
        ],
    );
    assert_eq!(loads, 1);
}

#[test]
fn a_timed_out_elicitation_resumes_the_body_in_the_same_tick() {
    let mut s = state();
    s.task.status = TaskStatus::InputRequired;
    s.inputs.insert("q".into(), elicit("q", Some(at(900))));
    let mut input = s.inputs["q"].clone();
    input.answered = true;
    input.timed_out = true;
    input.answered_at = Some(at(900));
    let mut resumed = s.task.clone();
    resumed.transition(TaskStatus::Working, at(900));
    resumed.next_run_at = Some(at(900));
    resumed.run_cause = Some("input-timed-out".into());
    let writes = vec![Write::PutInput(input), Write::PutTask(resumed)];
    let after = applied(&s, version_guard(&s.task), &writes);
    let (journal, claim) = claimed(&after, at(900));
    let mut tick = tick();
    assert_eq!(tick.start(), Command::Load(LoadScope::Full));
    let command = tick.handle(Event::Loaded(Some(s.clone())), at(900));
    assert_eq!(
        command,
        Ok(Command::Apply {
            guard: version_guard(&s.task),
            writes
        })
    );
    assert_eq!(tick.handle(done(), at(900)), Ok(claim));
    assert_eq!(tick.handle(done(), at(900)), Ok(Command::Run(journal)));
}

#[test]
fn a_claim_another_engine_made_is_run_again_at_once() {
    let mut s = state();
    s.task.generation = 3;
    s.task.next_run_at = Some(at(60_000));
    let mut redelivered = s.task.clone();
    redelivered.next_run_at = Some(at(5));
    redelivered.run_cause = Some("lost-activation".into());
    let after = applied(&s, version_guard(&s.task), &put(&redelivered));
    let (journal, claim) = claimed(&after, at(5));
    // This engine made no claim on the task: the row's claim died with an engine that is gone.
    let mut tick = tick().with_own_claim(Some(2));
    tick.start();
    assert_eq!(
        tick.handle(Event::Loaded(Some(s.clone())), at(5)),
        Ok(Command::Apply {
            guard: version_guard(&s.task),
            writes: put(&redelivered),
        })
    );
    assert_eq!(tick.handle(done(), at(5)), Ok(claim));
    assert_eq!(tick.handle(done(), at(5)), Ok(Command::Run(journal)));
}

#[test]
fn a_tick_waits_for_its_own_engines_claim_to_run_out() {
    let mut s = state();
    s.task.next_run_at = Some(at(60_000));
    let generation = s.task.generation;
    play(
        tick().with_own_claim(Some(generation)),
        &[(
            Event::Loaded(Some(s)),
            at(5),
            Command::Sleep(Some(at(60_000))),
        )],
    );
}

#[test]
fn a_body_stopped_by_the_store_settles_nothing() {
    let s = sleeping();
    let (journal, claim) = claimed(&s, at(500));
    let mut tick = tick();
    tick.start();
    assert_eq!(tick.handle(Event::Loaded(Some(s)), at(500)), Ok(claim));
    assert_eq!(tick.handle(done(), at(500)), Ok(Command::Run(journal)));
    let failed = BodyOutcome::Stopped(End {
        suspension: Suspension::StoreUnavailable("disk full".into()),
        rerun: false,
    });
    assert_eq!(
        tick.handle(Event::Ran(failed), at(600)),
        Err(EngineError::Store("disk full".into()))
    );
}

#[test]
fn a_task_that_keeps_changing_ends_the_tick_with_an_error() {
    let s = sleeping();
    let mut tick = tick();
    tick.start();
    for attempt in 1..MAX_CONFLICTS {
        let command = tick.handle(Event::Loaded(Some(s.clone())), at(500));
        assert!(matches!(command, Ok(Command::Apply { .. })), "{command:?}");
        let command = tick.handle(Event::Applied(Applied::Stale), at(500));
        assert_eq!(command, Ok(Command::Load(LoadScope::Full)), "{attempt}");
    }
    tick.handle(Event::Loaded(Some(s)), at(500)).expect("claim");
    assert_eq!(
        tick.handle(Event::Applied(Applied::Stale), at(500)),
        Err(conflict("t"))
    );
}

#[test]
fn a_due_run_is_claimed_run_and_settled_with_two_loads() {
    let (journal, mut script) = run_sleeping(BodyOutcome::Returned(json!({"ok": true})));
    let mut completed = journal.task.clone();
    completed.result = Some(json!({"ok": true}).to_string());
    completed.transition(TaskStatus::Completed, at(600));
    script.extend(settle_on(
        &journal.scoped(LoadScope::Control),
        &completed,
        PURGE,
    ));
    let loads = play(tick(), &script);
    assert_eq!(loads, 2, "one load to decide and claim, one to settle");
}

#[test]
fn a_failed_body_completes_with_a_tool_error() {
    let (journal, mut script) = run_sleeping(BodyOutcome::Errored("boom".into()));
    let mut record = journal.task.clone();
    record.result = Some(tool_error_result("boom").to_string());
    record.transition(TaskStatus::Completed, at(600));
    script.extend(settle_on(&journal, &record, PURGE));
    play(tick(), &script);
}

#[test]
fn a_settlement_that_meets_a_concurrent_write_settles_on_the_new_row() {
    let (journal, mut script) = run_sleeping(wait());
    let mut unclaimed = journal.task.clone();
    unclaimed.next_run_at = None;
    unclaimed.run_cause = None;
    // A cancel arrived while the body ran: the row's version moved, the lease did not.
    let mut cancelled = journal.clone();
    cancelled.task.cancel_requested = true;
    cancelled.task.version += 1;
    let mut settled = cancelled.task.clone();
    settled.transition(TaskStatus::Cancelled, at(600));
    script.push(settlement_write(&journal, &unclaimed));
    script.push((
        Event::Applied(Applied::Stale),
        at(600),
        Command::Load(LoadScope::Control),
    ));
    script.extend(settle_on(&cancelled, &settled, PURGE));
    play(tick(), &script);
}

#[test]
fn a_settlement_after_the_lease_moved_on_writes_nothing() {
    let (journal, mut script) = run_sleeping(BodyOutcome::Errored("boom".into()));
    // A newer activation took over (and finished the sleep).
    let mut taken = journal.clone();
    taken.steps.clear();
    taken.task.generation += 1;
    taken.task.next_run_at = Some(at(90_000));
    script.push((
        Event::Loaded(Some(taken)),
        at(600),
        Command::Sleep(Some(at(90_000))),
    ));
    play(tick(), &script);
}

#[test]
fn a_body_that_waits_gives_up_its_claims_anchor_but_keeps_a_later_request() {
    // The sleep the body recorded (at 500 in these rows) is what wakes it next.
    let (journal, mut script) = run_sleeping(wait());
    let mut record = journal.task.clone();
    record.next_run_at = None;
    record.run_cause = None;
    script.extend(settle_on(&journal, &record, Some(at(500))));
    play(tick(), &script);

    // An answer asked for a run meanwhile: the request stays.
    let (journal, mut script) = run_sleeping(wait());
    let mut asked = journal.clone();
    asked.task.next_run_at = Some(at(550));
    asked.task.run_cause = Some("answer".into());
    script.extend(settle_on(&asked, &asked.task, Some(at(500))));
    play(tick(), &script);
}
