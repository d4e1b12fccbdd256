//! A recorded cancel wins: once `tasks/cancel` is recorded, the task ends `cancelled` after its
//! cleanup, whatever is recorded after it before the body runs again (an answer to its
//! question, a child's outcome). Only an activation already running when the cancel came may
//! still complete the task. Written against the public API, on every store.

mod common;

use std::time::Duration;

use common::{Env, Log, RegistrySetup, ask, block_on_ready, reply};
use durable_mcp::{TaskDefinition, TaskRegistry, TaskStatus};
use serde_json::{Value, json};

/// `t`: books a room (undone by a compensation), asks whether to pay, then returns at once or,
/// with `pay_after`, pays in a step first.
fn booking(log: &Log, pay_after: bool) -> TaskDefinition {
    let log = log.clone();
    TaskDefinition::new("t", move |cx, _| {
        let log = log.clone();
        Box::pin(async move {
            let room = cx
                .step("book-room", || async { Ok("room-7".to_owned()) })
                .await?;
            let released = log.clone();
            cx.on_cancel("release-room", move || async move {
                released.push(format!("release {room}"));
                Ok(())
            });
            cx.elicit("confirm", ask("pay now?")).await?;
            if pay_after {
                let paid = log.clone();
                cx.step("pay", || async move {
                    paid.push("pay");
                    Ok(())
                })
                .await?;
            }
            Ok(reply("paid"))
        })
    })
    .ttl(Some(Duration::from_secs(24 * 3600)))
}

fn accept() -> Value {
    json!({ "confirm": { "action": "accept", "content": { "ok": true } } })
}

/// Records a cancel and then an answer, as two clients would, before the task runs again.
fn cancel_then_answer(env: &mut Env, id: &str) {
    let engine = env.engine();
    engine.cancel(id, None).expect("the cancel is recorded");
    engine
        .update(id, &accept(), None)
        .expect("an answer after a cancel is acknowledged");
}

fn a_cancel_wins_over_a_later_answer_when_nothing_follows_it(make: RegistrySetup) {
    let log = Log::default();
    let mut env = make(TaskRegistry::new().register(booking(&log, false)));
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::InputRequired);
    cancel_then_answer(&mut env, &id);
    let question = &env.journal(&id).inputs["confirm"];
    assert!(
        !question.answered,
        "an answer to a task being cancelled changes nothing"
    );
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(env.result(&id), None);
    assert_eq!(
        log.events(),
        ["release room-7"],
        "the compensation ran once"
    );
    env.crash_and_restart();
    env.advance("1h");
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(log.events(), ["release room-7"]);
}

fn a_cancel_wins_over_a_later_answer_with_a_step_after_it(make: RegistrySetup) {
    let log = Log::default();
    let mut env = make(TaskRegistry::new().register(booking(&log, true)));
    let id = env.start();
    cancel_then_answer(&mut env, &id);
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(log.events(), ["release room-7"], "nothing was paid");
}

/// `t`: registers a compensation, starts a child that works for a minute, and returns the
/// child's output. It publishes the child's id as its status.
fn parent(log: &Log) -> TaskDefinition {
    let log = log.clone();
    TaskDefinition::new("t", move |cx, _| {
        let log = log.clone();
        Box::pin(async move {
            cx.on_cancel("undo", move || async move {
                log.push("undo");
                Ok(())
            });
            let child = cx.start_child("work", "work", json!({})).await?;
            cx.status(child.task_id().to_owned()).await?;
            let said = child.output::<String>().await?;
            Ok(reply(format!("child said {said}")))
        })
    })
}

fn work() -> TaskDefinition {
    TaskDefinition::new("work", |cx, _| {
        Box::pin(async move {
            cx.sleep("busy", "1m").await?;
            Ok(json!({ "content": [], "structuredContent": "done" }))
        })
    })
}

/// The child ends and delivers its outcome after the parent's cancel was recorded and before
/// the parent runs again: the parent still ends `cancelled`, with its compensation run.
fn a_cancel_wins_over_a_later_child_outcome(make: RegistrySetup) {
    let log = Log::default();
    let mut env = make(TaskRegistry::new().register(parent(&log)).register(work()));
    let id = env.start();
    let child = env.get(&id).status_message.expect("the child's id");
    assert_eq!(env.status(&child), TaskStatus::Working);
    env.engine()
        .cancel(&id, None)
        .expect("the cancel is recorded");
    // The child's minute passes and it ends, telling its parent, before the parent's tick.
    let later = env.now().saturating_add(Duration::from_secs(60));
    env.clock().set(later);
    block_on_ready(env.engine().tick(&child)).expect("the child's tick");
    assert_eq!(env.status(&child), TaskStatus::Completed);
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Cancelled);
    assert_eq!(env.result(&id), None);
    assert_eq!(log.events(), ["undo"]);
}

/// The control: an activation already running when the cancel comes may still complete the
/// task, if it breaks no new ground after the cancel.
fn an_activation_running_when_the_cancel_comes_may_complete(make: RegistrySetup) {
    let gate = common::Gate::default();
    let held = gate.clone();
    let definition = TaskDefinition::new("t", move |cx, _| {
        let held = held.clone();
        Box::pin(async move {
            cx.on_cancel("undo", || async { Ok(()) });
            // The step's attempt runs (its timeout is a timer on virtual time) until the gate
            // opens.
            cx.step("work", || async move {
                held.wait().await;
                Ok(())
            })
            .await?;
            Ok(reply("done"))
        })
    });
    let mut env = make(TaskRegistry::new().register(definition));
    let id = env.start();
    assert!(env.is_running(&id));
    env.engine()
        .cancel(&id, None)
        .expect("the cancel is recorded");
    gate.open();
    env.run_until_idle();
    assert_eq!(env.status(&id), TaskStatus::Completed);
}

common::on_every_store_of_registry!(
    a_cancel_wins_over_a_later_answer_when_nothing_follows_it,
    a_cancel_wins_over_a_later_answer_with_a_step_after_it,
    a_cancel_wins_over_a_later_child_outcome,
    an_activation_running_when_the_cancel_comes_may_complete,
);
