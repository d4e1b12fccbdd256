//! Time, randomness and patch gates that replay: `cx.now()`, the `cx.random_*` family,
//! `cx.uuid()`, `cx.patched()` and `cx.retire_patch()`, on every store, across restarts at
//! every kind of suspension, and across a deploy of changed code.

mod common;

use common::{Counter, Log, Setup, ask, no_jitter, reply, step_keys, text};
use durable_mcp::store::StepKind;
use durable_mcp::{Backoff, StepError, TaskDefinition, TaskError, TaskRegistry, TaskStatus};
use serde_json::json;

/// Clock readings, random numbers and UUIDs drawn outside steps are the same on every replay:
/// after a retry backoff, a sleep and an elicitation, each followed by a restart.
fn values_replay_across_restarts_at_every_suspension(setup: Setup) {
    let seen = Log::default();
    let seen2 = seen.clone();
    let flaky = Counter::default();
    let mut env = setup(
        TaskDefinition::new("t", move |cx, _| {
            let (seen, flaky) = (seen2.clone(), flaky.clone());
            Box::pin(async move {
                let started = cx.now();
                let (number, id) = (cx.random_u64(), cx.uuid());
                let (pick, fraction) = (cx.random_range(10..20), cx.random_f64());
                seen.push(format!("first {started:?} {number} {id} {pick} {fraction}"));
                cx.step("flaky", move || async move {
                    if flaky.hit() == 1 {
                        return Err(StepError::retryable("busy"));
                    }
                    Ok(())
                })
                .await?;
                let retried = cx.now();
                seen.push(format!("retried {retried:?}"));
                cx.sleep("nap", "1m").await?;
                let woke = (cx.now(), cx.random_u64());
                seen.push(format!("woke {woke:?}"));
                cx.elicit("approve", ask("go on?")).await?;
                let answered = cx.now();
                Ok(json!({
                    "content": [],
                    "structuredContent": {
                        "started": started.as_millis(), "retried": retried.as_millis(),
                        "woke": woke.0.as_millis(), "answered": answered.as_millis(),
                        "id": id, "pick": pick, "fraction": fraction,
                    }
                }))
            })
        })
        .retry(no_jitter(3, 5_000, Backoff::Constant)),
    );
    let id = env.start();
    env.crash_and_restart();
    env.advance("5s");
    env.crash_and_restart();
    env.advance("1m");
    assert_eq!(env.status(&id), TaskStatus::InputRequired);
    env.crash_and_restart();
    env.advance("1h");
    env.update(
        &id,
        json!({ "approve": { "action": "accept", "content": {} } }),
    );
    env.crash_and_restart();
    env.run_until_idle();
    let result = env.result(&id).expect("completed");
    let values = &result["structuredContent"];

    // Each line was logged by every run that reached it, and every run saw the same values.
    let events = seen.events();
    for prefix in ["first ", "retried ", "woke "] {
        let lines: Vec<_> = events.iter().filter(|e| e.starts_with(prefix)).collect();
        assert!(lines.len() >= 2, "{prefix:?} was replayed: {events:?}");
        assert!(lines.iter().all(|line| *line == lines[0]), "{lines:?}");
    }
    let millis = |key: &str| values[key].as_u64().expect("a time");
    assert_eq!(millis("retried") - millis("started"), 5_000);
    assert_eq!(millis("woke") - millis("retried"), 60_000);
    assert_eq!(millis("answered") - millis("woke"), 3_600_000);
    let uuid = values["id"].as_str().expect("uuid");
    assert_eq!(uuid.len(), 36);
    assert_eq!(&uuid[14..15], "4", "version 4: {uuid}");
    assert!((10..20).contains(&values["pick"].as_u64().expect("pick")));
    assert!((0.0..1.0).contains(&values["fraction"].as_f64().expect("fraction")));
    // In the order recorded; the last reading went into the result, not the journal: no
    // write followed it, so nothing outside the task saw it before the task completed.
    assert_eq!(
        step_keys(&env.journal(&id), StepKind::Value),
        ["$now", "$random", "$now#2", "$now#3"]
    );
}

/// Drawing values writes nothing by itself: the records go out with the next write. 121 draws
/// before a step cost one write: the records must be durable before the step's closure, which
/// may use them, reaches the outside world.
fn values_cost_no_write_of_their_own(setup: Setup) {
    let writes = |draws: bool| {
        let mut env = setup(TaskDefinition::new("t", move |cx, _| {
            Box::pin(async move {
                if draws {
                    let numbers: Vec<u64> = (0..100).map(|_| cx.random_u64()).collect();
                    let times: Vec<_> = (0..20).map(|_| cx.now()).collect();
                    assert_eq!((numbers.len(), times.len()), (100, 20));
                }
                cx.step("use", || async { Ok(1) }).await?;
                cx.sleep("nap", "1s").await?;
                Ok(reply("done"))
            })
        }));
        let before = env.counts.writes();
        let id = env.start();
        env.advance("1s");
        assert_eq!(text(&env.result(&id).expect("done")), "done");
        let records = step_keys(&env.journal(&id), StepKind::Value).len();
        (env.counts.writes() - before, records)
    };
    let (plain, none) = writes(false);
    let (drawing, records) = writes(true);
    assert_eq!((none, records), (0, 21));
    assert_eq!(drawing, plain + 1, "one write for all the draws");
}

/// The old body: reserve, wait an hour, charge.
fn old_body() -> TaskDefinition {
    TaskDefinition::new("order", |cx, _| {
        Box::pin(async move {
            cx.step("reserve", || async { Ok(()) }).await?;
            cx.sleep("settle", "1h").await?;
            cx.step("charge", || async { Ok(100) }).await?;
            Ok(reply("charged 100"))
        })
    })
}

/// The new body: a tax step gated before the wait, a receipt gated after it.
fn new_body() -> TaskDefinition {
    TaskDefinition::new("order", |cx, _| {
        Box::pin(async move {
            cx.step("reserve", || async { Ok(()) }).await?;
            let tax = if cx.patched("tax") {
                cx.step("tax", || async { Ok(20) }).await?
            } else {
                0
            };
            cx.sleep("settle", "1h").await?;
            let receipt = cx.patched("receipt");
            if receipt {
                cx.step("receipt", || async { Ok(()) }).await?;
            }
            cx.step("charge", move || async move { Ok(100 + tax) })
                .await?;
            Ok(reply(format!("charged {} receipt {receipt}", 100 + tax)))
        })
    })
}

/// The body once the tax patch is retired: its new side is the only code.
fn retired_body() -> TaskDefinition {
    TaskDefinition::new("order", |cx, _| {
        Box::pin(async move {
            cx.step("reserve", || async { Ok(()) }).await?;
            cx.retire_patch("tax")?;
            cx.step("tax", || async { Ok(20) }).await?;
            cx.sleep("settle", "1h").await?;
            cx.step("charge", || async { Ok(120) }).await?;
            Ok::<_, TaskError>(reply("charged 120"))
        })
    })
}

fn deploy(version: &str, body: TaskDefinition) -> TaskRegistry {
    TaskRegistry::new().code_version(version).register(body)
}

/// A body replaced between two activations: the task in flight finishes on the old path where
/// it had passed a gate and on the new path where it had not; a task created on the new code
/// takes every new path; each shows the code version it was created under.
fn a_deploy_with_patch_gates_keeps_the_task_in_flight_on_its_path(setup: Setup) {
    let mut env = setup(old_body());
    env.deploy(deploy("v1", old_body()));
    let old = env.harness.create("order", json!({}));
    env.run_until_idle();
    assert_eq!(env.status(&old), TaskStatus::Working, "waiting an hour");

    env.deploy(deploy("v2", new_body()));
    let new = env.harness.create("order", json!({}));
    env.run_until_idle();
    env.advance("1h");
    assert_eq!(
        text(&env.result(&old).expect("old done")),
        "charged 100 receipt true",
        "past the tax gate on v1, before the receipt gate"
    );
    assert_eq!(
        text(&env.result(&new).expect("new done")),
        "charged 120 receipt true"
    );
    assert!(!env.journal(&old).steps.contains_key("tax"));
    assert_eq!(env.get(&old).code_version.as_deref(), Some("v1"));
    assert_eq!(env.get(&new).code_version.as_deref(), Some("v2"));
}

/// Retiring a patch while a task that took its old side is still in flight fails that task
/// with a message naming the patch; tasks that took the new side go on.
fn a_retired_patch_fails_only_a_task_on_its_old_side(setup: Setup) {
    let mut env = setup(old_body());
    env.deploy(deploy("v1", old_body()));
    let oldest = env.harness.create("order", json!({}));
    env.run_until_idle();
    env.deploy(deploy("v2", new_body()));
    let newer = env.harness.create("order", json!({}));
    env.run_until_idle();
    env.deploy(deploy("v3", retired_body()));
    env.advance("1h");
    env.assert_failed_with(&oldest, "patch \"tax\" is retired");
    assert_eq!(text(&env.result(&newer).expect("done")), "charged 120");
}

common::on_every_store!(
    values_replay_across_restarts_at_every_suspension,
    values_cost_no_write_of_their_own,
    a_deploy_with_patch_gates_keeps_the_task_in_flight_on_its_path,
    a_retired_patch_fails_only_a_task_on_its_old_side,
);
