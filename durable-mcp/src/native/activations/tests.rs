use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Activations, Queue};
use crate::core::Timestamp;
use crate::native::SqliteStore;
use crate::native::clock::{SystemClock, TokioTimer};
use crate::runtime::{
    Clock, Engine, Host, Scheduler, StepError, TaskContext, TaskDefinition, TaskError, TaskRegistry,
};

/// Pops every task the queue holds, in the order their ticks start.
fn drain(queue: &mut Queue) -> Vec<String> {
    std::iter::from_fn(|| queue.pop()).collect()
}

#[test]
fn free_slots_go_to_each_lane_in_turn() {
    let mut queue = Queue::default();
    queue.recover("r1".to_owned());
    queue.recover("r2".to_owned());
    queue.set_timer("d2", Timestamp(20));
    queue.set_timer("d1", Timestamp(10));
    queue.set_timer("asked", Timestamp(30));
    queue.set_timer("later", Timestamp(99));
    queue.promote(Timestamp(50));
    queue.request("asked", Timestamp(50));
    let order = drain(&mut queue);
    assert_eq!(order, ["d1", "r1", "asked", "d2", "r2"]);
    // The timer that is not due stays where it is.
    assert_eq!(
        queue.places.get("later"),
        Some(&super::Place::Timer(Timestamp(99)))
    );
}

#[test]
fn a_task_waits_in_one_place_and_a_new_wake_up_replaces_the_old() {
    let mut queue = Queue::default();
    queue.set_timer("t", Timestamp(10));
    queue.set_timer("t", Timestamp(5));
    queue.promote(Timestamp(10));
    queue.request("t", Timestamp(10));
    queue.set_timer("t", Timestamp(7));
    queue.promote(Timestamp(10));
    assert_eq!(drain(&mut queue), ["t"]);
    assert_eq!(queue.requested_count, 0);
    assert!(queue.places.is_empty());
}

#[test]
fn a_request_moves_only_a_due_task_and_a_recovered_task_is_ticked_once() {
    let mut queue = Queue::default();
    queue.set_timer("sleeping", Timestamp(100));
    queue.request("sleeping", Timestamp(50));
    assert_eq!(queue.requested_count, 0);
    queue.recover("old".to_owned());
    // A request woke it before its first tick: it comes first, once (that tick recovers it).
    queue.set_timer("old", Timestamp(40));
    queue.promote(Timestamp(50));
    queue.request("old", Timestamp(50));
    assert_eq!(drain(&mut queue), ["old"]);
    // A task found at start that already had a wake-up is not queued twice.
    queue.set_timer("twice", Timestamp(1));
    queue.recover("twice".to_owned());
    queue.promote(Timestamp(50));
    assert_eq!(drain(&mut queue), ["twice"]);
}

thread_local! {
    /// Step closures running now, the most that ever ran at once, and how often each
    /// task's closure ran.
    static RUNNING: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
    static RUNS: RefCell<HashMap<String, usize>> = RefCell::default();
    /// The tasks whose bodies returned, in order.
    static FINISHED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

async fn work(cx: &TaskContext, input: Value) -> Result<Value, TaskError> {
    let task_id = cx.task_id().to_owned();
    if input["ask"] == true {
        cx.elicit(
            "go",
            json!({ "mode": "form", "message": "go?",
            "requestedSchema": { "type": "object", "properties": {} } }),
        )
        .await?;
    }
    let counted = task_id.clone();
    cx.step("work", || async move {
        RUNNING.with(|running| running.set(running.get() + 1));
        PEAK.with(|peak| peak.set(peak.get().max(RUNNING.with(Cell::get))));
        tokio::time::sleep(Duration::from_millis(5)).await;
        RUNNING.with(|running| running.set(running.get() - 1));
        RUNS.with(|runs| *runs.borrow_mut().entry(counted).or_default() += 1);
        Ok::<_, StepError>(())
    })
    .await?;
    FINISHED.with(|finished| finished.borrow_mut().push(task_id));
    Ok(json!({ "content": [] }))
}

fn engine(activations: &Rc<Activations>) -> Rc<Engine> {
    let registry = TaskRegistry::new().register(TaskDefinition::new("work", |cx, input| {
        Box::pin(work(cx, input))
    }));
    let host = Host {
        store: Rc::new(SqliteStore::in_memory().expect("an in-memory store")),
        clock: Rc::new(SystemClock),
        timer: Rc::new(TokioTimer),
        scheduler: Rc::clone(activations) as Rc<dyn Scheduler>,
    };
    Rc::new(Engine::new(registry, host))
}

async fn until_finished(count: usize) {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while FINISHED.with(|finished| finished.borrow().len()) < count {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    waited.await.expect("every task finished within 30 s");
}

fn in_local_set(test: impl Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    tokio::task::LocalSet::new().block_on(&runtime, test);
}

#[test]
fn no_more_activations_run_than_the_bound_and_every_task_runs_once() {
    in_local_set(async {
        let activations = Activations::new(4);
        let engine = engine(&activations);
        let created: Vec<String> = (0..40)
            .map(|_| engine.create("work", json!({})).expect("created").task_id)
            .collect();
        tokio::task::spawn_local(Rc::clone(&activations).run(Rc::clone(&engine)));
        until_finished(created.len()).await;
        assert_eq!(
            PEAK.with(Cell::get),
            4,
            "the bound is reached, never passed"
        );
        RUNS.with(|runs| {
            let runs = runs.borrow();
            for task_id in &created {
                assert_eq!(runs.get(task_id), Some(&1), "task {task_id}");
            }
        });
        activations.settle(Duration::from_secs(5)).await;
        assert_eq!(activations.running(), 0);
    });
}

#[test]
fn an_answered_task_runs_before_a_backlog_created_earlier() {
    in_local_set(async {
        let activations = Activations::new(1);
        let engine = engine(&activations);
        let asking = engine
            .create("work", json!({ "ask": true }))
            .unwrap()
            .task_id;
        let runner = tokio::task::spawn_local(Rc::clone(&activations).run(Rc::clone(&engine)));
        // The asking task suspends on its question, then a backlog forms behind one slot.
        while engine.get(&asking, None).unwrap().status != crate::core::TaskStatus::InputRequired {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let backlog: Vec<String> = (0..30)
            .map(|_| engine.create("work", json!({})).unwrap().task_id)
            .collect();
        tokio::time::sleep(Duration::from_millis(12)).await;
        engine
            .update(
                &asking,
                &json!({ "go": { "action": "accept", "content": {} } }),
                None,
            )
            .unwrap();
        activations.requested(&asking, SystemClock.now());
        until_finished(backlog.len() + 1).await;
        runner.abort();
        let finished = FINISHED.with(|finished| finished.borrow().clone());
        let position = finished.iter().position(|id| *id == asking).unwrap();
        // Behind at most the activation running when it was answered and the one due task
        // its turn alternates with: never behind the whole backlog.
        assert!(
            position <= 4,
            "answered task finished {position}th of {}",
            finished.len()
        );
    });
}
