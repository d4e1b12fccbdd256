//! Child tasks: a body starts tasks of registered tools with `cx.start_child`, and waits for
//! them durably. Each start is exactly-once across replays and restarts; the parent sleeps
//! (unloaded) until its children end and is woken by them; a child's failure reaches the
//! parent as an error it handles; cancelling the parent cancels its children. On every store.

mod common;

use std::time::Duration;

use common::{Counter, Env, Gate, Log, RegistrySetup, reply, step_status, text};
use durable_mcp::store::{StepStatus, StoreError};
use durable_mcp::testing::StoreCall;
use durable_mcp::{TaskDefinition, TaskError, TaskRegistry, TaskStatus};
use futures_util::future::try_join_all;
use serde_json::{Value, json};

/// `resize`: sleeps a minute (the work), then answers `{"width": w}` as structured content.
/// Counts its runs of the `render` step in `renders`, and logs a cancel.
fn resize(renders: &Counter, log: &Log) -> TaskDefinition {
    let (renders, log) = (renders.clone(), log.clone());
    TaskDefinition::new("resize", move |cx, input: Value| {
        let (renders, log) = (renders.clone(), log.clone());
        Box::pin(async move {
            let width = input["width"].as_u64().unwrap_or(0);
            if width == 0 {
                return Err(TaskError::failed("a width of 0 is no image"));
            }
            cx.on_cancel("note", move || async move {
                log.push(format!("resize {width} cancelled"));
                Ok(())
            });
            cx.sleep("render-time", "1m").await?;
            cx.step("render", || async {
                renders.hit();
                Ok(())
            })
            .await?;
            Ok(json!({
                "content": [{ "type": "text", "text": format!("{width}px") }],
                "structuredContent": { "width": width },
            }))
        })
    })
    .ttl(Some(Duration::from_secs(24 * 3600)))
}

/// `gallery` (`t`): one `resize` child per width in its input, awaited together; answers the
/// sum of their widths. A failed child is reported in the answer, not passed on.
fn gallery() -> TaskDefinition {
    TaskDefinition::new("t", |cx, input: Value| {
        Box::pin(async move {
            let widths: Vec<u64> = serde_json::from_value(input["widths"].clone())?;
            let mut children = Vec::new();
            for width in widths {
                children.push(
                    cx.start_child("thumb", "resize", json!({ "width": width }))
                        .await?,
                );
            }
            let outputs = try_join_all(children.iter().map(|child| child.output::<Value>())).await;
            match outputs {
                Ok(outputs) => {
                    let total: u64 = outputs.iter().map(|o| o["width"].as_u64().unwrap()).sum();
                    Ok(reply(format!("total {total}")))
                }
                Err(TaskError::ChildFailed {
                    key,
                    status,
                    message,
                    ..
                }) => Ok(reply(format!("{key} {status}: {message}"))),
                Err(other) => Err(other),
            }
        })
    })
    .ttl(Some(Duration::from_secs(24 * 3600)))
}

fn setup(make: RegistrySetup, renders: &Counter, log: &Log) -> Env {
    make(
        TaskRegistry::new()
            .register(gallery())
            .register(resize(renders, log)),
    )
}

fn start(env: &mut Env, widths: &[u64]) -> String {
    let id = env.harness.create("t", json!({ "widths": widths }));
    env.run_until_idle();
    id
}

/// The ids of the parent's children, in start order.
fn children(env: &Env, parent: &str) -> Vec<String> {
    let journal = env.journal(parent);
    let mut rows: Vec<_> = journal
        .steps
        .values()
        .filter(|row| row.kind == durable_mcp::store::StepKind::Child)
        .collect();
    rows.sort_by_key(|row| row.seq);
    rows.iter()
        .map(|row| durable_mcp::__internals::child_task_id(parent, &row.key))
        .collect()
}

/// Three children run side by side while the parent sleeps unloaded; each is a task a client
/// sees, naming its parent; they end, wake the parent, and it completes with their outputs.
/// Restarts at every suspension start nothing twice.
fn a_parent_fans_out_and_collects_its_childrens_outputs(make: RegistrySetup) {
    let (renders, log) = (Counter::default(), Log::default());
    let mut env = setup(make, &renders, &log);
    let id = start(&mut env, &[320, 640, 1280]);
    assert_eq!(env.status(&id), TaskStatus::Working);
    assert!(
        !env.is_running(&id),
        "the parent is unloaded while it waits"
    );
    let deadline = env
        .get(&id)
        .created_at
        .saturating_add(Duration::from_secs(24 * 3600));
    assert_eq!(
        env.next_wake(&id),
        Some(deadline),
        "nothing but its retention and its children wakes it"
    );
    let kids = children(&env, &id);
    assert_eq!(kids.len(), 3);
    for kid in &kids {
        let snapshot = env.get(kid);
        assert_eq!(snapshot.status, TaskStatus::Working);
        assert_eq!(snapshot.tool_name, "resize");
        assert_eq!(snapshot.parent_task_id.as_deref(), Some(id.as_str()));
    }
    env.crash_and_restart();
    env.run_until_idle();
    assert_eq!(children(&env, &id), kids, "a replay starts no other child");
    env.advance("1m");
    assert_eq!(env.status(&id), TaskStatus::Completed);
    assert_eq!(text(&env.result(&id).unwrap()), "total 2240");
    assert_eq!(renders.get(), 3, "each child rendered once");
    for kid in &kids {
        assert_eq!(env.status(kid), TaskStatus::Completed);
        let link = env.journal(kid).task.parent.expect("a parent link");
        assert!(link.notified, "the parent took the outcome");
    }
    env.crash_and_restart();
    env.advance("1h");
    assert_eq!(renders.get(), 3, "nothing runs again");
}

/// A crash after the children ended and before the parent ran again: the outcomes are in the
/// parent's journal, and the recovered parent completes from them.
fn outcomes_delivered_before_a_crash_are_kept(make: RegistrySetup) {
    let (renders, log) = (Counter::default(), Log::default());
    let mut env = setup(make, &renders, &log);
    let id = start(&mut env, &[10, 20]);
    let kids = children(&env, &id);
    // Run the children's wakes but stop before the parent's.
    let later = env.now().saturating_add(Duration::from_secs(60));
    env.clock().set(later);
    for kid in &kids {
        common::block_on_ready(env.engine().tick(kid)).expect("the child's tick");
    }
    let journal = env.journal(&id);
    for row in journal
        .steps
        .values()
        .filter(|r| r.kind == durable_mcp::store::StepKind::Child)
    {
        assert_eq!(row.status, StepStatus::Completed, "{}", row.key);
    }
    assert_eq!(env.status(&id), TaskStatus::Working);
    env.crash_and_restart();
    env.run_until_idle();
    assert_eq!(text(&env.result(&id).unwrap()), "total 30");
    assert_eq!(renders.get(), 2);
}

/// A child that completes with a tool error reaches the parent as `ChildFailed`, which the
/// body handles; the siblings' outcomes are kept.
fn a_childs_failure_reaches_the_parent_as_an_error_it_handles(make: RegistrySetup) {
    let (renders, log) = (Counter::default(), Log::default());
    let mut env = setup(make, &renders, &log);
    let id = start(&mut env, &[0, 50]);
    env.advance("1m");
    assert_eq!(env.status(&id), TaskStatus::Completed);
    assert_eq!(
        text(&env.result(&id).unwrap()),
        "thumb completed: its tool error: a width of 0 is no image"
    );
}

/// Cancelling the parent cancels the children it waits for (their own compensations run),
/// and only then is the parent cancelled.
fn cancelling_the_parent_cancels_its_children(make: RegistrySetup) {
    let (renders, log) = (Counter::default(), Log::default());
    let mut env = setup(make, &renders, &log);
    let id = start(&mut env, &[1, 2]);
    let kids = children(&env, &id);
    env.cancel(&id);
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    for kid in &kids {
        assert_eq!(env.status(kid), TaskStatus::Cancelled);
    }
    let mut events = log.events();
    events.sort();
    assert_eq!(events, ["resize 1 cancelled", "resize 2 cancelled"]);
    let journal = env.journal(&id);
    for key in ["$stopped:thumb", "$stopped:thumb#2"] {
        assert!(
            journal.steps.contains_key(key),
            "{key} recorded by the cleanup"
        );
    }
    env.crash_and_restart();
    env.advance("1d");
    assert_eq!(renders.get(), 0, "no child rendered");
}

/// A start of a tool that is not registered fails with `ChildFailed`, recorded: a replay fails
/// the same way without trying again.
fn a_start_of_an_unknown_tool_fails_and_is_recorded(make: RegistrySetup) {
    let attempts = Counter::default();
    let seen = attempts.clone();
    let parent = TaskDefinition::new("t", move |cx, _| {
        let seen = seen.clone();
        Box::pin(async move {
            seen.hit();
            let started = cx.start_child("spawn", "no-such-tool", json!({})).await;
            let message = match started {
                Err(TaskError::ChildFailed { message, .. }) => message,
                other => panic!("expected a refused start, got {other:?}"),
            };
            cx.sleep("pause", "1m").await?;
            Ok(reply(message))
        })
    });
    let mut env = make(TaskRegistry::new().register(parent));
    let id = start(&mut env, &[]);
    env.crash_and_restart();
    env.advance("1m");
    assert_eq!(env.status(&id), TaskStatus::Completed);
    let message = text(&env.result(&id).unwrap()).to_owned();
    assert!(message.contains("no-such-tool"), "{message}");
    assert_eq!(
        step_status(&env.journal(&id), "spawn"),
        Some(StepStatus::Failed)
    );
    assert!(attempts.get() >= 2, "the body replayed");
}

/// A child that ends while its parent's activation still runs, before the parent wrote again:
/// its outcome lands in the parent's journal meanwhile, is not overwritten by what the running
/// activation records after it, and the parent, run again at once, completes with it.
fn an_outcome_delivered_while_the_parent_runs_is_kept(make: RegistrySetup) {
    // The child opens the gate the parent waits at, so that the child ends while the parent's
    // activation is still running.
    let gate = Gate::default();
    let (held, opener) = (gate.clone(), gate.clone());
    let parent = TaskDefinition::new("t", move |cx, _| {
        let held = held.clone();
        Box::pin(async move {
            let quick = cx
                .start_child("quick", "echo", json!({ "say": "hi" }))
                .await?;
            // Waits without writing: what the start recorded last is still to go out.
            held.wait().await;
            let said = quick.output::<String>().await?;
            Ok(reply(format!("child said {said}")))
        })
    });
    let echo = TaskDefinition::new("echo", move |_, input: Value| {
        let opener = opener.clone();
        Box::pin(async move {
            opener.open();
            Ok(reply(input["say"].as_str().unwrap_or_default()))
        })
    });
    let mut env = make(TaskRegistry::new().register(parent).register(echo));
    let id = start(&mut env, &[]);
    let kid = children(&env, &id).remove(0);
    assert_eq!(env.status(&kid), TaskStatus::Completed);
    assert_eq!(env.status(&id), TaskStatus::Completed);
    assert_eq!(text(&env.result(&id).unwrap()), "child said hi");
}

/// A start whose child could not be created (its row is recorded, the creation failed): the
/// parent stops, runs again after a restart, and creates the child then, once.
fn a_start_cut_off_before_the_child_exists_creates_it_on_the_next_run(make: RegistrySetup) {
    let (renders, log) = (Counter::default(), Log::default());
    let mut env = setup(make, &renders, &log);
    let refused = std::cell::Cell::new(false);
    env.counts.refuse(move |call| match call {
        StoreCall::Create { task } if task.parent.is_some() && !refused.replace(true) => {
            Some(StoreError("the disk is full".into()))
        }
        _ => None,
    });
    let harness = &mut env.harness;
    let id = harness.create("t", json!({ "widths": [7] }));
    // The harness panics at a tick that fails, as this one does with the store.
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        harness.run_until_idle();
    }));
    let panic = failed.expect_err("the tick fails with the store");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("the disk is full"), "{message}");
    let journal = harness.journal(&id);
    assert_eq!(
        step_status(&journal, "thumb"),
        Some(StepStatus::Pending),
        "the start's row is recorded"
    );
    let kid = durable_mcp::__internals::child_task_id(&id, "thumb");
    assert!(harness.engine().get(&kid, None).is_err(), "no child yet");
    harness.crash_and_restart();
    harness.advance("1m");
    assert_eq!(harness.status(&id), TaskStatus::Completed);
    assert_eq!(text(&harness.result(&id).unwrap()), "total 7");
    assert_eq!(renders.get(), 1);
}

common::on_every_store_of_registry!(
    a_parent_fans_out_and_collects_its_childrens_outputs,
    outcomes_delivered_before_a_crash_are_kept,
    a_childs_failure_reaches_the_parent_as_an_error_it_handles,
    cancelling_the_parent_cancels_its_children,
    a_start_of_an_unknown_tool_fails_and_is_recorded,
    an_outcome_delivered_while_the_parent_runs_is_kept,
    a_start_cut_off_before_the_child_exists_creates_it_on_the_next_run,
);
