//! Behaviour of the engine through the harness, on virtual time, on every store.

mod common;

use std::time::Duration;

use common::{Counter, Gate, Log, Setup, no_jitter, reply, step_keys, task, text};
use durable_mcp::__internals::step_failure::StepFailure;
use durable_mcp::store::{StepKind, StepStatus};
use durable_mcp::{Backoff, MAX_DURATION, RetryPolicy, TaskStatus, Timestamp};
use durable_mcp::{ElicitOutcome, StepError, StepFailureKind, TaskError};
use serde_json::{Value, json};

fn completed_steps_never_run_again(setup: Setup) {
    let (a, b, c) = (Counter::default(), Counter::default(), Counter::default());
    let (a2, b2, c2) = (a.clone(), b.clone(), c.clone());
    let mut env = setup(task("t", move |cx, _| {
        let (a, b, c) = (a2.clone(), b2.clone(), c2.clone());
        Box::pin(async move {
            let x: u32 = cx.step("a", || async move { Ok(a.hit()) }).await?;
            let y: u32 = cx.step("b", || async move { Ok(b.hit() + 10) }).await?;
            cx.sleep("nap", "1m").await?;
            let z: u32 = cx.step("c", || async move { Ok(c.hit() + 100) }).await?;
            Ok(reply(format!("{x} {y} {z}")))
        })
    }));
    let id = env.start();
    assert_eq!((a.get(), b.get(), c.get()), (1, 1, 0));
    assert_eq!(env.status(&id), TaskStatus::Working);
    env.advance("1m");
    assert_eq!((a.get(), b.get(), c.get()), (1, 1, 1));
    assert_eq!(text(&env.result(&id).expect("result")), "1 11 101");
    let journal = env.journal(&id);
    assert_eq!(step_keys(&journal, StepKind::Do), ["a", "b", "c"]);
    assert_eq!(step_keys(&journal, StepKind::Sleep), ["nap"]);
}

fn steps_in_a_loop_get_occurrence_keys(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            let mut total = 0;
            for i in 0..3u32 {
                total += cx.step("item", || async move { Ok(i * 2) }).await?;
            }
            Ok(reply(total.to_string()))
        })
    }));
    let id = env.start();
    assert_eq!(text(&env.result(&id).expect("result")), "6");
    let journal = env.journal(&id);
    assert_eq!(
        step_keys(&journal, StepKind::Do),
        ["item", "item#2", "item#3"]
    );
    assert_eq!(journal.steps["item#3"].result.as_deref(), Some("4"));
}

fn idempotency_keys_name_each_occurrence_of_a_step(setup: Setup) {
    let keys = Log::default();
    let k2 = keys.clone();
    let mut env = setup(task("t", move |cx, _| {
        let keys = k2.clone();
        Box::pin(async move {
            for _ in 0..2 {
                let key = cx.idempotency_key("send");
                let keys = keys.clone();
                cx.step("send", || async move {
                    keys.push(key);
                    Ok(())
                })
                .await?;
                cx.sleep("pause", "1s").await?;
            }
            Ok(reply("sent twice"))
        })
    }));
    let id = env.start();
    env.advance("1s");
    env.advance("1s");
    assert_eq!(env.status(&id), TaskStatus::Completed);
    // Each step ran once, across three activations, under its own key.
    assert_eq!(
        keys.events(),
        [format!("{id}:send"), format!("{id}:send#2")]
    );
}

fn a_crash_before_the_journal_write_reruns_that_step_once(setup: Setup) {
    let (fetches, sends) = (Counter::default(), Counter::default());
    let keys = Log::default();
    let (f2, s2, k2) = (fetches.clone(), sends.clone(), keys.clone());
    let mut env = setup(task("t", move |cx, _| {
        let (fetches, sends, keys) = (f2.clone(), s2.clone(), k2.clone());
        Box::pin(async move {
            cx.step("fetch", || async move { Ok(fetches.hit()) })
                .await?;
            let key = cx.idempotency_key("send");
            cx.step("send", || async move {
                keys.push(key);
                // The side effect happens, then the host dies before the result is journaled.
                if sends.hit() == 1 {
                    std::future::pending::<()>().await;
                }
                Ok(())
            })
            .await?;
            Ok(reply("sent"))
        })
    }));
    let id = env.start();
    assert!(env.is_running(&id));
    assert_eq!((fetches.get(), sends.get()), (1, 1));
    env.crash_and_restart();
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Completed);
    assert_eq!((fetches.get(), sends.get()), (1, 2));
    let expected = format!("{id}:send");
    assert_eq!(keys.events(), [expected.clone(), expected]);
}

fn retries_follow_the_policy(setup: Setup) {
    let attempts = Counter::default();
    let a2 = attempts.clone();
    let mut env = setup(
        task("t", move |cx, _| {
            let attempts = a2.clone();
            Box::pin(async move {
                cx.step("flaky", || async move {
                    attempts.hit();
                    Err::<(), _>(StepError::retryable("upstream said 503"))
                })
                .await?;
                Ok(reply("unreachable"))
            })
        })
        .retry(no_jitter(4, 1_000, Backoff::Exponential)),
    );
    let start = env.now();
    let at = |offset| start.saturating_add(Duration::from_millis(offset));
    let id = env.start();
    // Attempt n fails at the time shown; the next one is due 1 s, 2 s, 4 s later.
    for (attempt, next_at) in [(1, 1_000), (2, 3_000), (3, 7_000)] {
        assert_eq!(attempts.get(), attempt);
        assert_eq!(env.next_wake(&id), Some(at(next_at)));
        let row = &env.journal(&id).steps["flaky"];
        assert_eq!(
            (row.attempt, row.next_attempt_at),
            (attempt, Some(at(next_at)))
        );
        assert_eq!(row.last_error.as_deref(), Some("upstream said 503"));
        env.advance_to(at(next_at - 1));
        assert_eq!(attempts.get(), attempt, "no attempt before its time");
        env.advance_to(at(next_at));
    }
    assert_eq!(attempts.get(), 4);
    assert_eq!(env.status(&id), TaskStatus::Completed);
    let result = env.result(&id).expect("result");
    assert_eq!(result["isError"], true);
    assert_eq!(
        text(&result),
        "step \"flaky\" failed after 4 attempts: upstream said 503"
    );
    let row = &env.journal(&id).steps["flaky"];
    assert_eq!(row.status, StepStatus::Failed);
    assert_eq!(
        StepFailure::of_row(row).kind,
        StepFailureKind::AttemptsExhausted
    );
}

fn jittered_retries_stay_in_the_window(setup: Setup) {
    let mut env = setup(
        task("t", |cx, _| {
            Box::pin(async move {
                cx.step("flaky", || async {
                    Err::<(), _>(StepError::retryable("no"))
                })
                .await?;
                Ok(reply("unreachable"))
            })
        })
        .retry(RetryPolicy {
            jitter: true,
            ..no_jitter(2, 10_000, Backoff::Constant)
        }),
    );
    let id = env.create("t", json!({}));
    let start = env.now();
    env.run_until_idle();
    let wake = env.next_wake(&id).expect("retry scheduled");
    let delay = wake.as_millis() - start.as_millis();
    assert!((5_000..=10_000).contains(&delay), "{delay}");
}

fn a_non_retryable_error_stops_retries(setup: Setup) {
    let attempts = Counter::default();
    let a2 = attempts.clone();
    let mut env = setup(task("t", move |cx, _| {
        let attempts = a2.clone();
        Box::pin(async move {
            let outcome = cx
                .step("charge", || async move {
                    attempts.hit();
                    Err::<u32, _>(StepError::non_retryable("card declined"))
                })
                .await;
            match outcome {
                Err(TaskError::StepFailed {
                    attempts,
                    message,
                    kind: StepFailureKind::NonRetryable,
                    ..
                }) => Ok(reply(format!("gave up after {attempts}: {message}"))),
                other => Err(TaskError::failed(format!("unexpected {other:?}"))),
            }
        })
    }));
    let id = env.start();
    assert_eq!(attempts.get(), 1);
    assert_eq!(
        text(&env.result(&id).expect("result")),
        "gave up after 1: card declined"
    );
    assert_eq!(env.journal(&id).steps["charge"].status, StepStatus::Failed);
}

fn a_failed_step_fails_the_same_way_on_replay(setup: Setup) {
    let attempts = Counter::default();
    let a2 = attempts.clone();
    let mut env = setup(task("t", move |cx, _| {
        let attempts = a2.clone();
        Box::pin(async move {
            let first = cx
                .step("once", || async move {
                    attempts.hit();
                    Err::<u32, _>(StepError::non_retryable("bad input"))
                })
                .await;
            cx.sleep("nap", "1s").await?;
            Ok(reply(format!("{first:?}")))
        })
    }));
    let id = env.start();
    env.advance("1s");
    assert_eq!(attempts.get(), 1);
    assert!(text(&env.result(&id).expect("result")).contains("bad input"));
}

fn a_step_panic_is_a_failed_attempt(setup: Setup) {
    let attempts = Counter::default();
    let a2 = attempts.clone();
    let mut env = setup(
        task("t", move |cx, _| {
            let attempts = a2.clone();
            Box::pin(async move {
                let n: u32 = cx
                    .step("fragile", || async move {
                        if attempts.hit() == 1 {
                            panic!("index out of bounds");
                        }
                        Ok(7)
                    })
                    .await?;
                Ok(reply(n.to_string()))
            })
        })
        .retry(no_jitter(3, 500, Backoff::Constant)),
    );
    let id = env.start();
    let row = env.journal(&id).steps["fragile"].clone();
    assert_eq!(
        row.last_error.as_deref(),
        Some("the step panicked: index out of bounds")
    );
    env.advance("500ms");
    assert_eq!(text(&env.result(&id).expect("result")), "7");
    assert_eq!(attempts.get(), 2);
}

fn a_body_panic_completes_with_a_tool_error(setup: Setup) {
    let mut env = setup(task("t", |_, _| {
        Box::pin(async { panic!("bug in the body") })
    }));
    let id = env.start();
    let result = env.result(&id).expect("result");
    assert_eq!(result["isError"], true);
    assert_eq!(text(&result), "the task body panicked: bug in the body");
}

fn a_slow_attempt_times_out(setup: Setup) {
    let attempts = Counter::default();
    let a2 = attempts.clone();
    let mut env = setup(
        task("t", move |cx, _| {
            let attempts = a2.clone();
            Box::pin(async move {
                cx.step("hang", || async move {
                    attempts.hit();
                    std::future::pending::<()>().await;
                    Ok(())
                })
                .timeout(Duration::from_secs(10))
                .await?;
                Ok(reply("unreachable"))
            })
        })
        .retry(no_jitter(2, 1_000, Backoff::Constant)),
    );
    let id = env.start();
    assert!(env.is_running(&id));
    env.advance("9999ms");
    assert!(env.is_running(&id), "not before the timeout");
    env.advance("1ms");
    assert!(!env.is_running(&id));
    let row = env.journal(&id).steps["hang"].clone();
    assert_eq!(
        row.last_error.as_deref(),
        Some("the attempt timed out after 10s")
    );
    env.advance("1s");
    assert_eq!(attempts.get(), 2);
    env.advance("10s");
    let result = env.result(&id).expect("result");
    assert_eq!(
        text(&result),
        "step \"hang\" failed after 2 attempts: the attempt timed out after 10s"
    );
    let row = &env.journal(&id).steps["hang"];
    assert_eq!(StepFailure::of_row(row).kind, StepFailureKind::TimedOut);
}

fn sleeps_resume_at_the_right_time(setup: Setup) {
    let after = Counter::default();
    let a2 = after.clone();
    let mut env = setup(task("t", move |cx, _| {
        let after = a2.clone();
        Box::pin(async move {
            cx.sleep("short", Duration::from_secs(300)).await?;
            let until =
                durable_mcp::testing::VIRTUAL_EPOCH.saturating_add(Duration::from_secs(3600));
            cx.sleep_until("until", until).await?;
            after.hit();
            Ok(reply("awake"))
        })
    }));
    let id = env.create("t", json!({}));
    let start = env.now();
    env.run_until_idle();
    assert_eq!(
        env.next_wake(&id),
        Some(start.saturating_add(Duration::from_secs(300)))
    );
    env.advance("299999ms");
    assert_eq!(env.journal(&id).steps["short"].status, StepStatus::Pending);
    env.advance("1ms");
    assert_eq!(
        env.journal(&id).steps["short"].status,
        StepStatus::Completed
    );
    assert_eq!(
        env.next_wake(&id),
        Some(start.saturating_add(Duration::from_secs(3600)))
    );
    env.advance_to(start.saturating_add(Duration::from_millis(3_599_999)));
    assert_eq!(after.get(), 0);
    env.advance("1ms");
    assert_eq!(after.get(), 1);
    assert_eq!(env.status(&id), TaskStatus::Completed);
}

fn run_until_settled_follows_the_schedule(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            for _ in 0..3 {
                cx.sleep("hour", "1h").await?;
            }
            cx.elicit("q", common::ask("?")).await?;
            Ok(reply("done"))
        })
    }));
    let start = env.now();
    let id = env.create("t", json!({}));
    assert_eq!(
        env.run_until_settled(&id, "2h"),
        TaskStatus::Working,
        "bounded by the limit"
    );
    assert_eq!(env.run_until_settled(&id, "1d"), TaskStatus::InputRequired);
    assert_eq!(
        env.now(),
        start.saturating_add(Duration::from_secs(3 * 3600))
    );
    env.update(&id, json!({ "q": { "action": "accept" } }));
    assert_eq!(env.run_until_settled(&id, "1d"), TaskStatus::Completed);
}

fn elicit_waits_for_the_answer_and_reads_it(setup: Setup) {
    let before = Counter::default();
    let b2 = before.clone();
    let mut env = setup(task("t", move |cx, _| {
        let before = b2.clone();
        Box::pin(async move {
            cx.step("prepare", || async move { Ok(before.hit()) })
                .await?;
            let answer = cx
                .elicit("approve", common::ask("Send the report?"))
                .await?;
            let approved = answer["action"] == "accept" && answer["content"]["approve"] == true;
            Ok(reply(if approved { "sent" } else { "declined" }))
        })
    }));
    let id = env.start();
    let snapshot = env.get(&id);
    assert_eq!(snapshot.status, TaskStatus::InputRequired);
    assert_eq!(
        snapshot.input_requests,
        [("approve".to_owned(), common::ask("Send the report?"))]
    );
    assert_eq!(
        env.next_wake(&id),
        env.get(&id)
            .ttl
            .map(|t| snapshot.created_at.saturating_add(t))
    );
    env.advance("1h");
    assert_eq!(
        env.status(&id),
        TaskStatus::InputRequired,
        "waits without a deadline"
    );
    env.update(
        &id,
        json!({ "approve": { "action": "accept", "content": { "approve": false } } }),
    );
    assert_eq!(text(&env.result(&id).expect("result")), "declined");
    assert_eq!(before.get(), 1);
}

fn a_timed_elicit_times_out_and_ignores_late_answers(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            let outcome = cx
                .elicit("approve", common::ask("ok?"))
                .timeout("10m")
                .await?;
            cx.sleep("after", "1m").await?;
            Ok(reply(match outcome {
                ElicitOutcome::Answered(answer) => format!("answered {}", answer["action"]),
                ElicitOutcome::TimedOut => "timed out".to_owned(),
            }))
        })
    }));
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::InputRequired);
    env.advance("9m");
    assert_eq!(env.status(&id), TaskStatus::InputRequired);
    env.advance("1m");
    assert_eq!(env.status(&id), TaskStatus::Working);
    env.update(&id, json!({ "approve": { "action": "accept" } }));
    env.advance("1m");
    assert_eq!(text(&env.result(&id).expect("result")), "timed out");
    let input = &env.journal(&id).inputs["approve"];
    assert!(input.timed_out && input.response.is_none());
}

fn a_timed_elicit_answered_in_time(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            match cx.elicit("q", common::ask("?")).timeout("10m").await? {
                ElicitOutcome::Answered(answer) => Ok(reply(answer["content"]["n"].to_string())),
                ElicitOutcome::TimedOut => Ok(reply("timed out")),
            }
        })
    }));
    let id = env.start();
    env.advance("5m");
    env.update(
        &id,
        json!({ "q": { "action": "accept", "content": { "n": 42 } } }),
    );
    assert_eq!(text(&env.result(&id).expect("result")), "42");
}

fn an_offer_answer_cuts_the_pending_sleep(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.offer("stop", common::ask("Stop early?")).await?;
            for _ in 0..5 {
                cx.sleep("tick", "1h").await?;
                if let Some(answer) = cx.check_input("peek", "stop").await? {
                    return Ok(reply(format!("stopped: {}", answer["action"])));
                }
            }
            Ok(reply("ran out"))
        })
    }));
    let id = env.start();
    env.advance("1h");
    assert_eq!(env.status(&id), TaskStatus::Working);
    assert!(
        env.get(&id).input_requests.is_empty(),
        "offers are not listed"
    );
    let answered_at = env.now();
    env.update(&id, json!({ "stop": { "action": "accept" } }));
    assert_eq!(env.now(), answered_at);
    assert_eq!(
        text(&env.result(&id).expect("result")),
        "stopped: \"accept\""
    );
    let journal = env.journal(&id);
    assert_eq!(step_keys(&journal, StepKind::Sleep), ["tick", "tick#2"]);
    assert_eq!(step_keys(&journal, StepKind::Check), ["peek", "peek#2"]);
    assert!(journal.inputs["stop"].consumed);
}

fn an_offer_answered_between_sleeps_cuts_the_next_one(setup: Setup) {
    let attempts = Counter::default();
    let a2 = attempts.clone();
    let mut env = setup(
        task("t", move |cx, _| {
            let attempts = a2.clone();
            Box::pin(async move {
                cx.offer("stop", common::ask("?")).await?;
                cx.step("work", || async move {
                    if attempts.hit() == 1 {
                        return Err(StepError::retryable("busy"));
                    }
                    Ok(())
                })
                .await?;
                cx.sleep("nap", "1h").await?;
                let answer = cx.check_input("peek", "stop").await?;
                Ok(reply(format!("{}", answer.is_some())))
            })
        })
        .retry(no_jitter(3, 1_000, Backoff::Constant)),
    );
    let id = env.start();
    // A retry backoff is pending, no sleep: the answer marks the next sleep to be cut.
    env.update(&id, json!({ "stop": { "action": "accept" } }));
    env.advance("1s");
    assert_eq!(text(&env.result(&id).expect("result")), "true");
    assert!(!env.journal(&id).task.cut_next_sleep);
}

fn an_offer_claims_its_key_like_every_operation(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            let first = cx.offer("stop", common::ask("Stop?")).await?;
            let second = cx.offer("stop", common::ask("Stop now?")).await?;
            cx.sleep("nap", "1h").await?;
            let taken = cx.check_input("peek", &second).await?;
            Ok(reply(format!("{first} {second} {}", taken.is_some())))
        })
    }));
    let id = env.start();
    env.update(&id, json!({ "stop#2": { "action": "accept" } }));
    assert_eq!(text(&env.result(&id).expect("result")), "stop stop#2 true");
    let journal = env.journal(&id);
    // Two offers, each under its own key: the first keeps its request and is not answered.
    assert!(journal.inputs["stop"].request.contains("Stop?"));
    assert!(!journal.inputs["stop"].answered);
    assert!(journal.inputs["stop#2"].consumed);
}

fn check_input_without_an_offer_fails_the_task(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.check_input("peek", "never-offered").await?;
            Ok(reply("unreachable"))
        })
    }));
    let id = env.start();
    let snapshot = env.get(&id);
    assert_eq!(snapshot.status, TaskStatus::Failed);
    let error = snapshot.error.expect("error");
    assert_eq!(error.code, -32603);
    assert!(
        error.message.contains("call cx.offer(\"never-offered\""),
        "{}",
        error.message
    );
}

fn status_is_not_republished_on_replay(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.status("fetching").await?;
            cx.step("fetch", || async { Ok(1) }).await?;
            cx.status("waiting").meta(json!({ "phase": 2 })).await?;
            cx.sleep("nap", "1m").await?;
            cx.status("sending").await?;
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    let snapshot = env.get(&id);
    assert_eq!(snapshot.status_message.as_deref(), Some("waiting"));
    assert_eq!(snapshot.status_meta, Some(json!({ "phase": 2 })));
    assert_eq!(env.counts.publishes(), 2);
    env.advance("1m");
    assert_eq!(
        env.counts.publishes(),
        3,
        "only the new status is published"
    );
    let snapshot = env.get(&id);
    assert_eq!(snapshot.status_message.as_deref(), Some("sending"));
    assert_eq!(
        snapshot.status_meta,
        Some(json!({ "phase": 2 })),
        "meta kept"
    );
}

fn oversized_status_meta_fails_the_task(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.status("big")
                .meta(json!({ "blob": "x".repeat(9000) }))
                .await?;
            Ok(reply("unreachable"))
        })
    }));
    let id = env.start();
    env.assert_failed_with(&id, "limit of 8192 bytes");
}

fn cancel_before_the_first_run(setup: Setup) {
    let runs = Counter::default();
    let r2 = runs.clone();
    let mut env = setup(task("t", move |cx, _| {
        let runs = r2.clone();
        Box::pin(async move {
            cx.step("work", || async move { Ok(runs.hit()) }).await?;
            Ok(reply("done"))
        })
    }));
    let id = env.create("t", json!({}));
    env.cancel(&id);
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    env.advance("1h");
    assert_eq!(runs.get(), 0);
}

fn cancel_during_a_sleep(setup: Setup) {
    let after = Counter::default();
    let a2 = after.clone();
    let mut env = setup(task("t", move |cx, _| {
        let after = a2.clone();
        Box::pin(async move {
            cx.sleep("nap", "1h").await?;
            cx.step("after", || async move { Ok(after.hit()) }).await?;
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    env.cancel(&id);
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    env.cancel(&id);
    env.advance("2h");
    assert_eq!(after.get(), 0);
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
}

fn cancel_while_waiting_for_input(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.elicit("q", common::ask("?")).await?;
            Ok(reply("answered"))
        })
    }));
    let id = env.start();
    env.cancel(&id);
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    env.update(&id, json!({ "q": { "action": "accept" } }));
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert!(env.result(&id).is_none());
}

fn cancel_during_a_step_is_observed_at_the_next_boundary(setup: Setup) {
    let gate = Gate::default();
    let after = Counter::default();
    let (g2, a2) = (gate.clone(), after.clone());
    let mut env = setup(task("t", move |cx, _| {
        let (gate, after) = (g2.clone(), a2.clone());
        Box::pin(async move {
            cx.step("long", || async move {
                gate.wait().await;
                Ok(())
            })
            .await?;
            cx.step("after", || async move { Ok(after.hit()) }).await?;
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    assert!(env.is_running(&id));
    env.cancel(&id);
    assert_eq!(
        env.status(&id),
        TaskStatus::Working,
        "not observed inside a closure"
    );
    gate.open();
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(after.get(), 0);
    assert_eq!(env.journal(&id).steps["long"].status, StepStatus::Completed);
}

fn cancel_during_a_retry_backoff(setup: Setup) {
    let attempts = Counter::default();
    let a2 = attempts.clone();
    let mut env = setup(task("t", move |cx, _| {
        let attempts = a2.clone();
        Box::pin(async move {
            cx.step("flaky", || async move {
                attempts.hit();
                Err::<(), _>(StepError::retryable("no"))
            })
            .await?;
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    env.cancel(&id);
    env.advance("1h");
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(attempts.get(), 1);
}

fn cancel_of_a_finished_task_changes_nothing(setup: Setup) {
    let mut env = setup(task("t", |_, _| Box::pin(async { Ok(reply("done")) })));
    let id = env.start();
    let before = env.get(&id);
    env.cancel(&id);
    assert_eq!(env.get(&id), before);
}

fn ttl_expiry_then_purge(setup: Setup) {
    let mut env = setup(
        task("t", |cx, _| {
            Box::pin(async move {
                cx.sleep("long", "2h").await?;
                Ok(reply("done"))
            })
        })
        .ttl(Some(Duration::from_secs(3600))),
    );
    let id = env.start();
    env.advance("1h");
    let snapshot = env.get(&id);
    assert_eq!(snapshot.status, TaskStatus::Failed);
    let error = snapshot.error.expect("error");
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32603, "task expired after 1h")
    );
    env.advance("59s");
    assert!(
        env.engine().get(&id, None).is_ok(),
        "expired tasks stay visible a minute"
    );
    env.advance("1s");
    assert!(env.engine().get(&id, None).is_err());
    assert_eq!(env.engine().journal(&id).expect("read"), None);
    assert_eq!(env.next_wake(&id), None);
}

fn finished_tasks_are_purged_at_their_deadline(setup: Setup) {
    let mut env = setup(
        task("t", |_, _| Box::pin(async { Ok(reply("done")) })).ttl(Some(Duration::from_secs(600))),
    );
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::Completed);
    env.advance("9m");
    assert!(env.engine().get(&id, None).is_ok());
    env.advance("1m");
    assert!(env.engine().get(&id, None).is_err());
}

fn tasks_without_ttl_are_kept(setup: Setup) {
    let mut env = setup(task("t", |_, _| Box::pin(async { Ok(reply("done")) })).ttl(None));
    let id = env.start();
    assert_eq!(env.next_wake(&id), None);
    env.advance("400d");
    assert_eq!(env.status(&id), TaskStatus::Completed);
}

fn duplicate_and_out_of_order_updates(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            let a = cx.elicit("a", common::ask("first?")).await?;
            let b = cx.elicit("b", common::ask("second?")).await?;
            Ok(reply(format!(
                "{} {}",
                a["content"]["v"], b["content"]["v"]
            )))
        })
    }));
    let id = env.start();
    let answer = |v: u32| json!({ "action": "accept", "content": { "v": v } });
    // "b" is not asked yet: the key is unknown and ignored.
    env.update(&id, json!({ "b": answer(9), "zzz": answer(0) }));
    assert_eq!(env.get(&id).input_requests[0].0, "a");
    env.update(&id, json!({ "a": answer(1) }));
    assert_eq!(env.get(&id).input_requests[0].0, "b");
    // A repeated answer to "a" changes nothing; the first answer to "b" wins.
    env.update(&id, json!({ "a": answer(5) }));
    env.update(&id, json!({ "b": answer(2) }));
    env.update(&id, json!({ "b": answer(3) }));
    assert_eq!(text(&env.result(&id).expect("result")), "1 2");
}

fn bad_updates_are_refused_and_change_nothing(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.elicit("a", common::ask("?")).await?;
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    let before = (env.journal(&id), env.counts.writes());
    for bad in [
        json!([1]),
        json!("a"),
        json!({ "a": 1 }),
        json!({ "a": null }),
    ] {
        let error = env.engine().update(&id, &bad, None).expect_err("refused");
        assert!(
            error.to_string().starts_with("input responses must be"),
            "{error}"
        );
    }
    let oversized = json!({ "a": { "blob": "x".repeat(1024 * 1024) } });
    assert!(env.engine().update(&id, &oversized, None).is_err());
    assert_eq!((env.journal(&id), env.counts.writes()), before);
}

fn non_determinism_is_a_named_failure(setup: Setup) {
    let flipped = Counter::default();
    let f2 = flipped.clone();
    let mut env = setup(task("t", move |cx, _| {
        let flipped = f2.clone();
        Box::pin(async move {
            if flipped.get() == 0 {
                cx.step("x", || async { Ok(1) }).await?;
            } else {
                cx.sleep("x", "1s").await?;
            }
            cx.sleep("nap", "1m").await?;
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    flipped.hit();
    env.advance("1m");
    env.assert_failed_with(&id, "journal key \"x\": it was recorded as `do`");
    env.assert_failed_with(&id, "asks for `sleep`");
}

fn non_determinism_across_step_and_input_tables(setup: Setup) {
    let flipped = Counter::default();
    let f2 = flipped.clone();
    let mut env = setup(task("t", move |cx, _| {
        let flipped = f2.clone();
        Box::pin(async move {
            if flipped.get() == 0 {
                cx.step("ask", || async { Ok(1) }).await?;
                cx.sleep("nap", "1m").await?;
            } else {
                cx.elicit("ask", common::ask("?")).await?;
            }
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    flipped.hit();
    env.advance("1m");
    env.assert_failed_with(&id, "asks for `elicit`");
}

fn a_timed_out_elicitation_asked_without_its_timeout_is_non_determinism(setup: Setup) {
    let flipped = Counter::default();
    let f2 = flipped.clone();
    let mut env = setup(task("t", move |cx, _| {
        let flipped = f2.clone();
        Box::pin(async move {
            if flipped.get() == 0 {
                cx.elicit("approve", common::ask("ok?"))
                    .timeout("10m")
                    .await?;
            } else {
                cx.elicit("approve", common::ask("ok?")).await?;
            }
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::InputRequired);
    flipped.hit();
    env.advance("10m");
    env.assert_failed_with(&id, "non-determinism at journal key \"approve\"");
    env.assert_failed_with(&id, "recorded with a timeout");
}

fn values_over_the_limit_fail_naming_the_step(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.step("huge", || async { Ok("x".repeat(2 * 1024 * 1024)) })
                .await?;
            Ok(reply("unreachable"))
        })
    }));
    let id = env.start();
    env.assert_failed_with(&id, "the result of step \"huge\" is 2097154 bytes of JSON");
    assert!(env.journal(&id).steps.is_empty(), "nothing was journaled");
}

fn values_that_cannot_round_trip_fail_naming_the_step(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            let value: f64 = cx.step("ratio", || async { Ok(f64::NAN) }).await?;
            Ok(reply(value.to_string()))
        })
    }));
    let id = env.start();
    let expected = "the result of step \"ratio\" cannot be stored as JSON and read back";
    env.assert_failed_with(&id, expected);
}

fn an_oversized_task_result_fails_the_task(setup: Setup) {
    let mut env = setup(task("t", |_, _| {
        Box::pin(async { Ok(reply("x".repeat(2 * 1024 * 1024))) })
    }));
    let id = env.start();
    let snapshot = env.get(&id);
    assert_eq!(snapshot.status, TaskStatus::Failed);
    assert!(
        snapshot
            .error
            .expect("error")
            .message
            .starts_with("the task result is")
    );
}

fn tool_errors_complete_with_is_error(setup: Setup) {
    let mut env = setup(task("t", |_, input: Value| {
        Box::pin(async move {
            let to = input["to"]
                .as_str()
                .ok_or_else(|| TaskError::failed("missing `to`"))?;
            Ok(reply(to.to_owned()))
        })
    }));
    let id = env.start();
    let result = env.result(&id).expect("result");
    assert_eq!(
        (result["isError"].clone(), text(&result)),
        (json!(true), "missing `to`")
    );
}

fn invalid_step_names_fail_the_task(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.step("a#2", || async { Ok(1) }).await?;
            Ok(reply("unreachable"))
        })
    }));
    let id = env.start();
    env.assert_failed_with(&id, "must not contain '#'");
}

fn a_repeated_tick_runs_nothing_twice(setup: Setup) {
    let runs = Counter::default();
    let r2 = runs.clone();
    let mut env = setup(task("t", move |cx, _| {
        let runs = r2.clone();
        Box::pin(async move {
            cx.step("once", || async move { Ok(runs.hit()) }).await?;
            cx.sleep("nap", "1h").await?;
            Ok(reply("done"))
        })
    }));
    let id = env.start();
    let wake = env.next_wake(&id);
    for _ in 0..3 {
        common::block_on_ready(env.engine().tick(&id)).expect("tick");
    }
    assert_eq!((runs.get(), env.next_wake(&id)), (1, wake));
    assert_eq!(env.status(&id), TaskStatus::Working);
}

fn unknown_ids_read_nothing_and_write_nothing(setup: Setup) {
    let env = setup(task("t", |_, _| Box::pin(async { Ok(reply("done")) })));
    let writes = env.counts.writes();
    assert!(env.engine().get("nope", None).is_err());
    assert!(env.engine().update("nope", &json!({}), None).is_err());
    assert!(env.engine().cancel("nope", None).is_err());
    common::block_on_ready(env.engine().tick("nope")).expect("tick");
    assert_eq!(env.counts.writes(), writes);
}

fn tasks_bound_to_a_principal_are_hidden_from_others(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.elicit("q", common::ask("?")).await?;
            Ok(reply("done"))
        })
    }));
    let mut request = durable_mcp::http::CreateTask::new("t", json!({}));
    request.principal = Some("alice".into());
    let id = env.create_task(request);
    env.run_until_idle();
    let engine = env.engine();
    for caller in [None, Some("bob")] {
        let error = engine.get(&id, caller).expect_err("hidden");
        assert_eq!(error.to_string(), format!("task {id:?} not found"));
        assert!(engine.update(&id, &json!({ "q": {} }), caller).is_err());
        assert!(engine.cancel(&id, caller).is_err());
    }
    assert_eq!(
        engine.get(&id, Some("alice")).expect("visible").status,
        TaskStatus::InputRequired
    );
}

fn creation_is_idempotent_per_id_and_checked(setup: Setup) {
    let env = setup(task("t", |_, _| Box::pin(async { Ok(reply("done")) })));
    let engine = env.engine();
    let mut request = durable_mcp::http::CreateTask::new("t", json!({ "n": 1 }));
    request.task_id = Some("fixed".into());
    let first = engine.create_task(request.clone()).expect("create");
    request.input = json!({ "n": 2 });
    assert_eq!(engine.create_task(request).expect("again"), first);
    let journal = engine.journal("fixed").expect("read").expect("task");
    assert_eq!(journal.task.input, r#"{"n":1}"#);
    let mut other = durable_mcp::http::CreateTask::new("t", json!({ "n": 3 }));
    other.task_id = Some("fixed".into());
    other.principal = Some("mallory".into());
    let taken = engine
        .create_task(other)
        .expect_err("another principal's id");
    assert_eq!(
        taken.to_string(),
        "task id \"fixed\" is taken; leave task ids to the engine, which draws 128 random bits"
    );
    let unknown = engine.create("nope", json!({})).expect_err("unknown");
    assert_eq!(unknown.to_string(), "no task named \"nope\" is registered");
    let big = engine
        .create("t", json!({ "b": "x".repeat(1024 * 1024) }))
        .expect_err("big");
    assert!(big.to_string().starts_with("the task input is"));
}

fn task_ids_are_random_and_opaque(setup: Setup) {
    let env = setup(task("t", |_, _| Box::pin(async { Ok(reply("done")) })));
    let a = env.engine().create("t", json!({})).expect("create").task_id;
    let b = env.engine().create("t", json!({})).expect("create").task_id;
    assert_ne!(a, b);
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
}

fn a_snapshot_shows_the_options(setup: Setup) {
    let env = setup(
        task("t", |_, _| Box::pin(async { Ok(reply("done")) }))
            .ttl(Some(Duration::from_secs(60)))
            .poll_interval(Duration::from_millis(250)),
    );
    let snapshot = env.engine().create("t", json!({})).expect("create");
    assert_eq!(snapshot.status, TaskStatus::Working);
    assert_eq!(snapshot.ttl, Some(Duration::from_secs(60)));
    assert_eq!(snapshot.poll_interval, Duration::from_millis(250));
    assert_eq!(snapshot.created_at, snapshot.last_updated_at);
    assert_eq!(snapshot.status_message, None);
}

fn a_sleep_past_the_latest_time_is_capped_and_stays_readable(setup: Setup) {
    let mut env = setup(
        task("t", |cx, _| {
            Box::pin(async move {
                cx.sleep("forever", Duration::MAX).await?;
                Ok(reply("woke"))
            })
        })
        .ttl(Some(Duration::MAX)),
    );
    let id = env.start();
    // The latest time every host can store and schedule: JavaScript's `Date` maximum.
    let latest = Timestamp::MAX;
    assert_eq!(latest.as_millis(), 8_640_000_000_000_000);
    let snapshot = env.get(&id);
    assert_eq!(snapshot.status, TaskStatus::Working);
    assert_eq!(snapshot.ttl, Some(MAX_DURATION));
    let journal = env.journal(&id);
    assert_eq!(journal.steps["forever"].wake_at, Some(latest));
    assert_eq!(env.next_wake(&id), Some(latest));
}

fn a_retry_delay_past_the_latest_time_is_capped(setup: Setup) {
    let mut env = setup(
        task("t", |cx, _| {
            Box::pin(async move {
                cx.step("flaky", || async {
                    Err::<(), _>(StepError::retryable("upstream said 503"))
                })
                .await?;
                Ok(reply("unreachable"))
            })
        })
        .ttl(None)
        .retry(RetryPolicy {
            limit: 2,
            delay: Duration::MAX,
            backoff: Backoff::Constant,
            max_delay: Duration::MAX,
            jitter: false,
        }),
    );
    let id = env.start();
    let latest = Timestamp::MAX;
    assert_eq!(env.status(&id), TaskStatus::Working);
    assert_eq!(
        env.journal(&id).steps["flaky"].next_attempt_at,
        Some(latest)
    );
    assert_eq!(env.next_wake(&id), Some(latest));
}

common::on_every_store!(
    completed_steps_never_run_again,
    steps_in_a_loop_get_occurrence_keys,
    a_crash_before_the_journal_write_reruns_that_step_once,
    idempotency_keys_name_each_occurrence_of_a_step,
    retries_follow_the_policy,
    jittered_retries_stay_in_the_window,
    a_non_retryable_error_stops_retries,
    a_failed_step_fails_the_same_way_on_replay,
    a_step_panic_is_a_failed_attempt,
    a_body_panic_completes_with_a_tool_error,
    a_slow_attempt_times_out,
    sleeps_resume_at_the_right_time,
    run_until_settled_follows_the_schedule,
    elicit_waits_for_the_answer_and_reads_it,
    a_timed_elicit_times_out_and_ignores_late_answers,
    a_timed_elicit_answered_in_time,
    an_offer_answer_cuts_the_pending_sleep,
    an_offer_claims_its_key_like_every_operation,
    an_offer_answered_between_sleeps_cuts_the_next_one,
    check_input_without_an_offer_fails_the_task,
    status_is_not_republished_on_replay,
    oversized_status_meta_fails_the_task,
    cancel_before_the_first_run,
    cancel_during_a_sleep,
    cancel_while_waiting_for_input,
    cancel_during_a_step_is_observed_at_the_next_boundary,
    cancel_during_a_retry_backoff,
    cancel_of_a_finished_task_changes_nothing,
    ttl_expiry_then_purge,
    finished_tasks_are_purged_at_their_deadline,
    tasks_without_ttl_are_kept,
    duplicate_and_out_of_order_updates,
    bad_updates_are_refused_and_change_nothing,
    non_determinism_is_a_named_failure,
    non_determinism_across_step_and_input_tables,
    a_timed_out_elicitation_asked_without_its_timeout_is_non_determinism,
    values_over_the_limit_fail_naming_the_step,
    values_that_cannot_round_trip_fail_naming_the_step,
    an_oversized_task_result_fails_the_task,
    tool_errors_complete_with_is_error,
    invalid_step_names_fail_the_task,
    a_repeated_tick_runs_nothing_twice,
    unknown_ids_read_nothing_and_write_nothing,
    tasks_bound_to_a_principal_are_hidden_from_others,
    creation_is_idempotent_per_id_and_checked,
    task_ids_are_random_and_opaque,
    a_snapshot_shows_the_options,
    a_sleep_past_the_latest_time_is_capped_and_stays_readable,
    a_retry_delay_past_the_latest_time_is_capped,
);
