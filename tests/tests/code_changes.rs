//! The journal cannot be silently skipped: a task in flight whose body, on code deployed since,
//! no longer reaches a recorded step (renamed, removed, moved behind new work) fails with a
//! non-determinism error that names the keys, before the new code's next side effect; the same
//! change behind `cx.patched` is accepted; a concurrent body whose branches reach their
//! recorded keys in any order is not mistaken for one. Public API only, on every store.

mod common;

use common::{Counter, Log, RegistrySetup, reply, text};
use durable_mcp::{TaskContext, TaskDefinition, TaskError, TaskRegistry, TaskStatus};
use serde_json::{Value, json};

/// A step named `name` that logs its runs.
async fn logged(cx: &TaskContext, log: &Log, name: &str) -> Result<(), TaskError> {
    let log = log.clone();
    let entry = name.to_owned();
    cx.step(name, || async move {
        log.push(entry);
        Ok(())
    })
    .await
}

/// The order of operations of a version of the body: steps by name, `"pause"` for the hour's
/// sleep, `"patched:<gate>:<new>:<old>"` for a patch gate choosing between two steps (`-`:
/// none).
fn body(log: &Log, plan: &'static [&'static str]) -> TaskDefinition {
    let log = log.clone();
    TaskDefinition::new("order", move |cx, _| {
        let log = log.clone();
        Box::pin(async move {
            for op in plan {
                match op.split(':').collect::<Vec<_>>()[..] {
                    ["pause"] => cx.sleep("pause", "1h").await?,
                    ["patched", gate, new, old] => {
                        let side = if cx.patched(gate) { new } else { old };
                        // `-`: nothing on that side (a step removed behind the gate).
                        if side != "-" {
                            logged(cx, &log, side).await?;
                        }
                    }
                    _ => logged(cx, &log, op).await?,
                }
            }
            Ok(reply("done"))
        })
    })
}

const V1: &[&str] = &["fetch", "pause", "send"];

fn registry(log: &Log, plan: &'static [&'static str]) -> TaskRegistry {
    TaskRegistry::new().register(body(log, plan))
}

/// Starts a task on `V1`, lets it sleep past `fetch`, deploys `plan` and lets the hour pass.
/// Returns the task's id and the steps run after the deploy.
fn deploy_under_a_task_in_flight(
    make: RegistrySetup,
    plan: &'static [&'static str],
) -> (common::Env, String, Vec<String>) {
    let log = Log::default();
    let mut env = make(registry(&log, V1));
    let id = env.harness.create("order", json!({}));
    env.run_until_idle();
    assert_eq!(log.events(), ["fetch"]);
    env.deploy(registry(&log, plan));
    env.advance("1h");
    let after = log.events()[1..].to_vec();
    (env, id, after)
}

fn assert_refused(env: &common::Env, id: &str, unreached: &str, instead: &str) {
    let message = env.failure(id).message;
    for part in [
        "non-determinism",
        unreached,
        instead,
        "cx.patched",
        "Changing a task's code",
    ] {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
}

fn a_renamed_step_fails_the_task_before_the_new_step_runs(make: RegistrySetup) {
    let (env, id, ran) = deploy_under_a_task_in_flight(make, &["load", "pause", "send"]);
    assert_refused(
        &env,
        &id,
        "the keys \"fetch\" and \"pause\"",
        "new ground at \"load\" instead",
    );
    assert!(ran.is_empty(), "nothing ran on the new code: {ran:?}");
}

fn a_removed_step_fails_the_task_before_the_next_step_runs(make: RegistrySetup) {
    let (env, id, ran) = deploy_under_a_task_in_flight(make, &["pause", "send"]);
    assert_refused(&env, &id, "\"fetch\"", "new ground at \"send\"");
    assert!(ran.is_empty(), "{ran:?}");
}

fn a_step_moved_behind_new_work_fails_the_task(make: RegistrySetup) {
    let (env, id, ran) = deploy_under_a_task_in_flight(make, &["pause", "send", "fetch"]);
    assert_refused(&env, &id, "\"fetch\"", "new ground at \"send\"");
    assert!(ran.is_empty(), "{ran:?}");
}

fn a_body_that_returns_without_its_journal_fails(make: RegistrySetup) {
    let (env, id, ran) = deploy_under_a_task_in_flight(make, &["pause"]);
    assert_refused(&env, &id, "\"fetch\"", "returned without them");
    assert!(ran.is_empty(), "{ran:?}");
}

/// A step moved behind a wait the task has not passed is still reached: no error, and it is
/// not run again.
fn a_step_moved_behind_a_wait_is_still_reached(make: RegistrySetup) {
    let (env, id, ran) = deploy_under_a_task_in_flight(make, &["pause", "fetch", "send"]);
    assert_eq!(env.status(&id), TaskStatus::Completed);
    assert_eq!(ran, ["send"]);
}

/// `order` whose `fetch` fails its first attempt (retried 10 s later); with `wait_first`, the
/// body sleeps an hour before it fetches.
fn retrying(tries: &Counter, wait_first: bool) -> TaskDefinition {
    let tries = tries.clone();
    TaskDefinition::new("order", move |cx, _| {
        let tries = tries.clone();
        Box::pin(async move {
            if wait_first {
                cx.sleep("pause", "1h").await?;
            }
            cx.step("fetch", || async move {
                if tries.hit() == 1 {
                    return Err(durable_mcp::StepError::retryable("the shop is busy"));
                }
                Ok(())
            })
            .retry(common::no_jitter(3, 10_000, durable_mcp::Backoff::Constant))
            .await?;
            Ok(reply("fetched"))
        })
    })
}

/// A step waiting for its retry, which the new code no longer reaches before it waits: the
/// retry would only run the body to the same wait, over and over, so the task fails instead,
/// naming the step, and the step is not run again.
fn a_retrying_step_the_new_code_waits_before_fails_the_task(make: RegistrySetup) {
    let tries = Counter::default();
    let mut env = make(TaskRegistry::new().register(retrying(&tries, false)));
    let id = env.harness.create("order", json!({}));
    env.run_until_idle();
    assert_eq!(
        tries.get(),
        1,
        "the first attempt failed; the retry waits 10 s"
    );
    env.deploy(TaskRegistry::new().register(retrying(&tries, true)));
    env.advance("10s");
    assert_refused(&env, &id, "the key \"fetch\"", "and waited instead");
    assert_eq!(tries.get(), 1, "the step did not run again");
}

/// Each change behind a patch gate: the task in flight keeps its recorded path, and completes.
fn the_same_changes_behind_a_patch_gate_are_accepted(make: RegistrySetup) {
    for plan in [
        &["patched:rename:load:fetch", "pause", "send"][..],
        &["patched:moved:check:fetch", "pause", "send"][..],
        &["patched:removed:-:fetch", "pause", "send"][..],
    ] {
        let (env, id, ran) = deploy_under_a_task_in_flight(make, plan);
        assert_eq!(env.status(&id), TaskStatus::Completed, "{plan:?}");
        assert_eq!(ran, ["send"], "{plan:?}");
    }
}

/// Two branches, each with two steps: the first branch's second step was cut off by a crash
/// while the second branch recorded both of its. On the replay the first branch breaks new
/// ground before the second branch has reached its recorded steps; that is no divergence.
fn branches_reaching_their_journal_in_another_order_are_no_divergence(make: RegistrySetup) {
    let (log, tries) = (Log::default(), Counter::default());
    let gate = common::Gate::default();
    let definition = {
        let (log, tries, gate) = (log.clone(), tries.clone(), gate.clone());
        TaskDefinition::new("order", move |cx, _| {
            let (log, tries, gate) = (log.clone(), tries.clone(), gate.clone());
            Box::pin(async move {
                let first = async {
                    logged(cx, &log, "a").await?;
                    cx.step("b", || async move {
                        // The first attempt hangs until the crash; the next one finishes.
                        if tries.hit() == 1 {
                            gate.wait().await;
                        }
                        Ok(())
                    })
                    .await
                };
                let second = async {
                    logged(cx, &log, "c").await?;
                    logged(cx, &log, "d").await
                };
                futures_util::future::try_join(first, second).await?;
                Ok::<Value, TaskError>(reply("both"))
            })
        })
    };
    let mut env = make(TaskRegistry::new().register(definition));
    let id = env.harness.create("order", json!({}));
    env.run_until_idle();
    assert_eq!(log.events(), ["a", "c", "d"]);
    assert!(env.is_running(&id), "b's first attempt hangs");
    env.crash_and_restart();
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Completed);
    assert_eq!(text(&env.result(&id).unwrap()), "both");
    assert_eq!(log.events(), ["a", "c", "d"], "nothing recorded ran again");
    assert_eq!(tries.get(), 2);
}

common::on_every_store_of_registry!(
    a_renamed_step_fails_the_task_before_the_new_step_runs,
    a_removed_step_fails_the_task_before_the_next_step_runs,
    a_step_moved_behind_new_work_fails_the_task,
    a_body_that_returns_without_its_journal_fails,
    a_step_moved_behind_a_wait_is_still_reached,
    a_retrying_step_the_new_code_waits_before_fails_the_task,
    the_same_changes_behind_a_patch_gate_are_accepted,
    branches_reaching_their_journal_in_another_order_are_no_divergence,
);
