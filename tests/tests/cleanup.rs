//! Cleanup after a cancel: compensations registered with `cx.on_cancel` run as journaled steps
//! once a cancellation stops the body, the last registered first, exactly once, across
//! restarts and retries, bounded by the task's cleanup timeout; the task is `cancelled` only
//! when they are done. On every store.

mod common;

use std::time::Duration;

use common::{Counter, Log, Setup, ask, no_jitter, reply, step_keys, step_status};
use durable_mcp::store::{StepKind, StepStatus};
use durable_mcp::{Backoff, StepError, TaskDefinition, TaskStatus};

/// A trip: book a room and a car, each with its compensation, then wait for a day (or, with
/// `ask`, for an answer), then pay. The release of the room fails `room_failures` times.
fn trip(log: &Log, room_failures: u32, ask_first: bool) -> TaskDefinition {
    let log = log.clone();
    let room_attempts = Counter::default();
    TaskDefinition::new("t", move |cx, _| {
        let (log, room_attempts) = (log.clone(), room_attempts.clone());
        Box::pin(async move {
            let room = cx
                .step("book-room", || async { Ok("room-7".to_owned()) })
                .await?;
            let released = log.clone();
            cx.on_cancel("release-room", move || async move {
                if room_attempts.hit() <= room_failures {
                    released.push("release-room failed");
                    return Err(StepError::retryable("the hotel is busy"));
                }
                released.push(format!("release {room}"));
                Ok(())
            });
            let car = cx
                .step("book-car", || async { Ok("car-3".to_owned()) })
                .await?;
            let released = log.clone();
            cx.on_cancel("release-car", move || async move {
                released.push(format!("release {car}"));
                Ok(())
            });
            if ask_first {
                cx.elicit("confirm", ask("pay now?")).await?;
            } else {
                cx.sleep("wait", "1d").await?;
            }
            cx.step("pay", || async { Ok(()) }).await?;
            Ok(reply("paid"))
        })
    })
    .retry(no_jitter(5, 10_000, Backoff::Constant))
    .ttl(Some(Duration::from_secs(7 * 24 * 3600)))
}

/// Cancelled while it sleeps: both compensations run, the car's first, each once, and only
/// then is the task cancelled.
fn compensations_run_last_first_before_the_task_is_cancelled(setup: Setup) {
    let log = Log::default();
    let mut env = setup(trip(&log, 0, false));
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::Working);
    env.cancel(&id);
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(log.events(), ["release car-3", "release room-7"]);
    let journal = env.journal(&id);
    for key in ["$cleanup:release-room", "$cleanup:release-car"] {
        assert_eq!(
            step_status(&journal, key),
            Some(StepStatus::Completed),
            "{key}"
        );
    }
    assert!(!journal.steps.contains_key("pay"));
    env.crash_and_restart();
    env.advance("2d");
    assert_eq!(log.events().len(), 2, "nothing runs again");
}

/// A compensation that fails is retried with backoff while the task stays live; a restart
/// in the backoff replays the body up to the cancel and runs only what is left.
fn a_failing_compensation_is_retried_across_a_restart(setup: Setup) {
    let log = Log::default();
    let mut env = setup(trip(&log, 2, false));
    let id = env.start();
    env.cancel(&id);
    env.run_until_idle();
    assert_eq!(log.events(), ["release car-3", "release-room failed"]);
    assert_eq!(
        env.status(&id),
        TaskStatus::Working,
        "not cancelled before its cleanup"
    );
    env.crash_and_restart();
    env.advance("10s");
    assert_eq!(env.status(&id), TaskStatus::Working);
    env.crash_and_restart();
    env.advance("10s");
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(
        log.events(),
        [
            "release car-3",
            "release-room failed",
            "release-room failed",
            "release room-7"
        ]
    );
    let snapshot = env.get(&id);
    assert_eq!(snapshot.status_message, None, "nothing was left unrun");
}

/// A task waiting for input is cancelled the same way: its compensations run first.
fn a_task_waiting_for_input_cleans_up_too(setup: Setup) {
    let log = Log::default();
    let mut env = setup(trip(&log, 0, true));
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::InputRequired);
    env.cancel(&id);
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(log.events(), ["release car-3", "release room-7"]);
}

/// A cleanup that cannot finish ends at the task's cleanup timeout: the task is cancelled and
/// its status message says what was left unrun.
fn a_broken_cleanup_ends_at_its_deadline(setup: Setup) {
    let log = Log::default();
    let mut env = setup(trip(&log, u32::MAX, false).cleanup_timeout(Duration::from_secs(25)));
    let id = env.start();
    env.cancel(&id);
    env.run_until_idle();
    env.advance("10s");
    assert_eq!(env.status(&id), TaskStatus::Working);
    env.crash_and_restart();
    env.advance("15s");
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    let message = env.get(&id).status_message.unwrap_or_default();
    assert!(message.contains("1 compensation(s) not run"), "{message}");
    let failures = log.events().iter().filter(|e| e.contains("failed")).count();
    assert_eq!(
        failures, 3,
        "attempts at 0s, 10s and 20s, none at the 25s deadline"
    );
}

/// Compensations run only for a cancel: a task that completes runs none, and a cancel that
/// comes before any registration cancels at once.
fn compensations_run_only_after_a_cancel(setup: Setup) {
    let log = Log::default();
    let mut env = setup(trip(&log, 0, false));
    let done = env.start();
    env.advance("1d");
    assert_eq!(env.status(&done), TaskStatus::Completed);
    let fresh = env.harness.create("t", serde_json::json!({}));
    env.cancel(&fresh);
    env.run_until_idle();
    assert_eq!(env.status(&fresh), TaskStatus::Cancelled);
    assert!(log.events().is_empty(), "{:?}", log.events());
    assert!(
        step_keys(&env.journal(&done), StepKind::Do).contains(&"$cleanup:release-room".to_owned())
    );
}

common::on_every_store!(
    compensations_run_last_first_before_the_task_is_cancelled,
    a_failing_compensation_is_retried_across_a_restart,
    a_task_waiting_for_input_cleans_up_too,
    a_broken_cleanup_ends_at_its_deadline,
    compensations_run_only_after_a_cancel,
);
