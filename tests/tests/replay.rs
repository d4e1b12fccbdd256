//! Replay under concurrency, nesting, offers and abandoned activations: the defects a review
//! of the activation found, each on every store.

mod common;

use std::rc::Rc;
use std::time::Duration;

use common::{Counter, Gate, Log, Setup, no_jitter, reply, step_keys, task, text};
use durable_mcp::http::{Clock, Engine, Host};
use durable_mcp::store::StepKind;
use durable_mcp::store::StoreError;
use durable_mcp::store::Write;
use durable_mcp::testing::{
    Harness, MemoryStore, ObservedStore, RecordingScheduler, StoreCall, StoreObserver,
    VirtualClock, VirtualTimer,
};
use durable_mcp::{Backoff, TaskStatus};
use durable_mcp::{StepError, TaskDefinition, TaskError, TaskRegistry, step};
use futures_util::future::{Either, select, try_join_all};
use serde_json::json;

fn constant(limit: u32, delay_ms: u64) -> durable_mcp::RetryPolicy {
    no_jitter(limit, delay_ms, Backoff::Constant)
}

/// An offer's answer cuts the next sleep, and only that one, even when two sleeps follow in
/// one activation.
fn an_offer_answer_cuts_only_the_next_sleep(setup: Setup) {
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
                cx.sleep("first", "1h").await?;
                cx.sleep("second", "1h").await?;
                Ok(reply("slept"))
            })
        })
        .retry(constant(3, 1_000)),
    );
    let id = env.start();
    // No sleep is pending during the retry backoff: the answer marks the next sleep to be cut.
    env.update(&id, json!({ "stop": { "action": "accept" } }));
    assert!(env.journal(&id).task.cut_next_sleep);
    env.advance("1s");
    // The first sleep was cut; the second one waits its hour.
    assert_eq!(env.status(&id), TaskStatus::Working);
    assert!(!env.journal(&id).task.cut_next_sleep);
    env.advance("59m");
    assert_eq!(env.status(&id), TaskStatus::Working);
    env.advance("1m");
    assert_eq!(text(&env.result(&id).expect("result")), "slept");
}

/// Multiplies by ten, journaled.
#[step]
async fn times_ten(n: u64) -> Result<u64, StepError> {
    Ok(n * 10)
}

/// Calls another `#[step]` fn inside its own closure.
#[step]
async fn outer_sum(n: u64) -> Result<u64, StepError> {
    Ok(times_ten(n).await? + 1)
}

/// A `#[step]` fn called inside another step's closure runs as part of it: it is not
/// journaled, so a later step of its name is not mistaken for it after a replay.
fn a_step_fn_inside_a_step_simply_runs(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            let outer = outer_sum(1).await?;
            cx.sleep("nap", "1s").await?;
            let later = times_ten(5).await?;
            Ok(reply(format!("{outer} {later}")))
        })
    }));
    let id = env.start();
    env.advance("1s");
    assert_eq!(text(&env.result(&id).expect("result")), "11 50");
    let journal = env.journal(&id);
    assert_eq!(
        step_keys(&journal, StepKind::Do),
        ["outer_sum", "times_ten"]
    );
    assert_eq!(journal.steps["times_ten"].result.as_deref(), Some("50"));
}

/// Calling the task's context from inside a step's closure is refused with a named error.
fn a_context_call_inside_a_step_closure_fails_the_task(setup: Setup) {
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            let value: u32 = cx
                .step("outer", || async {
                    let inner: u32 = cx
                        .step("inner", || async { Ok(1) })
                        .await
                        .map_err(|error| StepError::non_retryable(error.to_string()))?;
                    Ok(inner + 1)
                })
                .await?;
            Ok(reply(value.to_string()))
        })
    }));
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::Failed);
    let message = env.failure(&id).message;
    assert!(
        message.contains("\"inner\"") && message.contains("closure of step \"outer\""),
        "{message}"
    );
    assert!(env.journal(&id).steps.is_empty(), "nothing was journaled");
}

/// `try_join_all` of steps: keys in call order, idempotency keys that name them, one run of
/// each closure across a retry backoff and a restart.
fn try_join_all_of_steps_across_suspensions_and_restarts(setup: Setup) {
    let runs = Log::default();
    let runs2 = runs.clone();
    let flaky = Counter::default();
    let flaky2 = flaky.clone();
    let mut env = setup(
        task("t", move |cx, _| {
            let (runs, flaky) = (runs2.clone(), flaky2.clone());
            Box::pin(async move {
                let fetches = (0..4u64).map(|i| {
                    let key = cx.idempotency_key("fetch");
                    let (runs, flaky) = (runs.clone(), flaky.clone());
                    cx.step("fetch", move || async move {
                        runs.push(format!("{i} {key}"));
                        if i == 1 && flaky.hit() == 1 {
                            return Err(StepError::retryable("busy"));
                        }
                        Ok(i * 10)
                    })
                });
                let values = try_join_all(fetches).await?;
                Ok(reply(format!("{values:?}")))
            })
        })
        .retry(constant(3, 1_000)),
    );
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::Working);
    env.crash_and_restart();
    env.advance("1s");
    assert_eq!(text(&env.result(&id).expect("result")), "[0, 10, 20, 30]");
    let key = |occurrence: &str| format!("{id}:fetch{occurrence}");
    assert_eq!(
        runs.events(),
        [
            format!("0 {}", key("")),
            format!("1 {}", key("#2")),
            format!("2 {}", key("#3")),
            format!("3 {}", key("#4")),
            format!("1 {}", key("#2")),
        ]
    );
    let journal = env.journal(&id);
    let values: Vec<_> = ["fetch", "fetch#2", "fetch#3", "fetch#4"]
        .iter()
        .map(|key| journal.steps[*key].result.clone().unwrap_or_default())
        .collect();
    assert_eq!(values, ["0", "10", "20", "30"]);
}

/// When one branch waits for a retry, an attempt already running in another branch finishes
/// and is recorded instead of being dropped and run again.
fn a_running_sibling_attempt_is_recorded_when_a_branch_waits(setup: Setup) {
    let slow_runs = Counter::default();
    let slow_runs2 = slow_runs.clone();
    let mut env = setup(
        task("t", move |cx, _| {
            let slow_runs = slow_runs2.clone();
            Box::pin(async move {
                let gate = Gate::default();
                let opener = gate.clone();
                let slow = cx.step("slow", move || async move {
                    slow_runs.hit();
                    gate.wait().await;
                    Ok(1u32)
                });
                let flaky = cx.step("flaky", move || async move {
                    // Lets the slow attempt finish, then fails once.
                    opener.open();
                    Err::<u32, _>(StepError::retryable("busy"))
                });
                let (a, b) = futures_util::future::try_join(slow, flaky).await?;
                Ok(reply(format!("{}", a + b)))
            })
        })
        .retry(constant(2, 1_000)),
    );
    let id = env.start();
    let journal = env.journal(&id);
    assert_eq!(journal.steps["slow"].result.as_deref(), Some("1"));
    env.advance("1s");
    assert_eq!(env.status(&id), TaskStatus::Completed);
    assert_eq!(slow_runs.get(), 1, "the slow attempt ran once");
}

/// A step raced against a durable timeout is seen as soon as it finishes, not when the timer
/// fires: the body runs again at once after the attempt is recorded.
fn a_step_raced_against_a_durable_timeout(setup: Setup) {
    let runs = Counter::default();
    let runs2 = runs.clone();
    let mut env = setup(task("t", move |cx, _| {
        let runs = runs2.clone();
        Box::pin(async move {
            let work = cx.step("work", move || async move {
                runs.hit();
                // Finishes on its third poll, after the body's first poll, as real I/O would.
                let mut polls = 0;
                std::future::poll_fn(|waker| {
                    polls += 1;
                    if polls == 3 {
                        return std::task::Poll::Ready(());
                    }
                    waker.waker().wake_by_ref();
                    std::task::Poll::Pending
                })
                .await;
                Ok(7u32)
            });
            let timeout = cx.sleep("timeout", "1h");
            match select(work, timeout).await {
                Either::Left((value, _)) => Ok(reply(format!("done {}", value?))),
                Either::Right((slept, _)) => {
                    slept?;
                    Ok(reply("timed out"))
                }
            }
        })
    }));
    let id = env.start();
    assert_eq!(text(&env.result(&id).expect("result")), "done 7");
    assert_eq!(runs.get(), 1);
}

common::on_every_store!(
    an_offer_answer_cuts_only_the_next_sleep,
    a_step_fn_inside_a_step_simply_runs,
    a_context_call_inside_a_step_closure_fails_the_task,
    try_join_all_of_steps_across_suspensions_and_restarts,
    a_running_sibling_attempt_is_recorded_when_a_branch_waits,
    a_step_raced_against_a_durable_timeout,
);

/// A host on a memory store and virtual time, with its clock and scheduler.
fn virtual_host() -> (Host, Rc<VirtualClock>, Rc<RecordingScheduler>) {
    let clock = VirtualClock::new();
    let scheduler = Rc::new(RecordingScheduler::default());
    let host = Host {
        store: Rc::new(MemoryStore::new()),
        clock: clock.clone(),
        timer: Rc::new(VirtualTimer(clock.clone())),
        scheduler: scheduler.clone(),
    };
    (host, clock, scheduler)
}

/// A branch elicits while a sibling's attempt is still running: the attempt is recorded, and
/// the task waits for the answer without asking to run again (an input_required task whose
/// wake stayed due would be ticked in a hot loop). Found by the simulator.
#[test]
fn an_attempt_finished_while_a_branch_waits_for_input_does_not_spin() {
    let registry = TaskRegistry::new().register(TaskDefinition::new("t", |cx, _| {
        Box::pin(async move {
            let work = cx.step("work", || async {
                // Finishes on its third poll, after the body's first poll.
                let mut polls = 0;
                std::future::poll_fn(|_| {
                    polls += 1;
                    if polls == 3 {
                        std::task::Poll::Ready(())
                    } else {
                        std::task::Poll::Pending
                    }
                })
                .await;
                Ok(1u32)
            });
            let ask = cx.elicit("ask", common::ask("go?"));
            let (value, answer) = futures_util::future::try_join(work, ask).await?;
            Ok::<_, TaskError>(reply(format!("{value} {}", answer["action"])))
        })
    }));
    let (host, _, scheduler) = virtual_host();
    let engine = Engine::new(registry, host);
    let id = engine.create("t", json!({})).expect("created").task_id;
    let mut tick = Box::pin(engine.tick(&id));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    while tick.as_mut().poll(&mut context).is_pending() {}
    let journal = engine.journal(&id).expect("read").expect("task");
    assert_eq!(journal.task.status, TaskStatus::InputRequired);
    assert_eq!(journal.steps["work"].result.as_deref(), Some("1"));
    assert_eq!(
        scheduler.wake_of(&id),
        journal.task.deadline(),
        "nothing but the expiry is due until the answer"
    );
}

/// By default an activation counts as running until its future is dropped, however long it
/// runs: a live activation past its lease (a slow step on the native host) is never doubled.
#[test]
fn a_live_activation_past_its_lease_is_not_run_twice() {
    let registry = TaskRegistry::new().register(TaskDefinition::new("t", |_, _| {
        Box::pin(async move {
            std::future::pending::<()>().await;
            Ok::<_, TaskError>(reply("never"))
        })
    }));
    let (host, clock, _) = virtual_host();
    let lease = Duration::from_secs(60);
    let engine = Engine::new(registry, host).lease(lease);
    let id = engine.create("t", json!({})).expect("created").task_id;
    let mut running = Box::pin(engine.tick(&id));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(running.as_mut().poll(&mut context).is_pending());
    clock.set(clock.now().saturating_add(lease * 2));
    assert!(engine.is_running(&id));
    common::block_on_ready(engine.tick(&id)).expect("tick");
    let generation = engine
        .journal(&id)
        .expect("read")
        .expect("task")
        .task
        .generation;
    assert_eq!(generation, 1, "no second activation claimed the task");
}

/// An activation the host abandons without dropping it (a platform that cancels a handler and
/// keeps the isolate) stops counting as running once its lease is over, on an engine told so
/// (the Cloudflare host's): the task runs again.
#[test]
fn an_abandoned_activation_expires_with_its_lease() {
    let first_run = Rc::new(std::cell::Cell::new(true));
    let first = first_run.clone();
    let registry = TaskRegistry::new().register(TaskDefinition::new("t", move |cx, _| {
        let first = first.clone();
        Box::pin(async move {
            if first.replace(false) {
                // Never finishes: the host abandons this activation.
                std::future::pending::<()>().await;
            }
            let value: u32 = cx.step("s", || async { Ok(3) }).await?;
            Ok::<_, TaskError>(reply(value.to_string()))
        })
    }));
    let (host, clock, _) = virtual_host();
    let lease = Duration::from_secs(60);
    let engine = Engine::new(registry, host)
        .lease(lease)
        .expire_activations_with_their_lease();
    let id = engine.create("t", json!({})).expect("created").task_id;
    let mut abandoned = Box::pin(engine.tick(&id));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(abandoned.as_mut().poll(&mut context).is_pending());
    std::mem::forget(abandoned);
    assert!(engine.is_running(&id));
    clock.set(clock.now().saturating_add(lease));
    assert!(!engine.is_running(&id));
    common::block_on_ready(engine.tick(&id)).expect("tick");
    let snapshot = engine.get(&id, None).expect("snapshot");
    assert_eq!(snapshot.status, TaskStatus::Completed);
}

/// Logs a store's step writes and flushes, to see them in order with the closures.
struct WriteLog(Log);

impl StoreObserver for WriteLog {
    fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        match call {
            StoreCall::Apply { writes, .. } => {
                for write in writes {
                    if let Write::PutStep(row) = write {
                        self.0.push(format!("write {}", row.key));
                    }
                }
            }
            StoreCall::Flush => self.0.push("flush"),
            _ => {}
        }
        Ok(())
    }
}

/// A store that holds step rows back (a Durable Object's turn batch) is flushed before every
/// step closure runs, so the closure's requests wait behind the rows before them.
#[test]
fn the_store_is_flushed_before_each_step_closure() {
    let log = Log::default();
    let in_body = log.clone();
    let registry = TaskRegistry::new().register(TaskDefinition::new("t", move |cx, _| {
        let log = in_body.clone();
        Box::pin(async move {
            for _ in 0..2 {
                let log = log.clone();
                cx.step("send", move || async move {
                    log.push("closure");
                    Ok(())
                })
                .await?;
            }
            Ok::<_, TaskError>(reply("sent"))
        })
    }));
    let store = ObservedStore::new(MemoryStore::new(), WriteLog(log.clone()));
    let mut harness = Harness::with_store(registry, Rc::new(store));
    let id = harness.create("t", json!({}));
    harness.run_until_idle();
    assert_eq!(text(&harness.result(&id).expect("result")), "sent");
    assert_eq!(
        log.events(),
        [
            "flush",
            "closure",
            "write send",
            "flush",
            "closure",
            "write send#2"
        ]
    );
}
