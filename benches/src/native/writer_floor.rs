//! The SQLite writer's floor under task creation, for `bench native`: how many tasks per second
//! one connection can store when it does nothing else.
//!
//! The store calls that write a `slow_compute`-like task, from its creation until it parks in
//! its sleep (the row, the claim, the sleep step, the settlement), are recorded once through the
//! real engine (the [`Harness`] on a [`SqliteStore`], seen by an [`ObservedStore`]). They are then
//! replayed for fresh task ids on a new database file, one connection, no HTTP, no JSON and no
//! engine in between. Every native worker writes through one such connection, so no worker count
//! creates tasks faster than this.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use durable_mcp::native::SqliteStore;
use durable_mcp::store::{Applied, Guard, Store, StoreError, TaskRecord, Write};
use durable_mcp::testing::{Harness, ObservedStore, StoreCall, StoreObserver};
use durable_mcp::{TaskContext, TaskDefinition, TaskError, TaskRegistry, TaskStatus};
use serde_json::{Value, json};
use xtask::Result;

use crate::stats::per_second;

/// What the floor measured.
#[derive(Clone, Copy, Debug)]
pub struct WriterFloor {
    /// Tasks stored per second.
    pub tasks_per_second: f64,
    /// Write transactions per task (its insert and each `apply`).
    pub writes_per_task: usize,
}

/// Records one task's writes, then replays them for `tasks` fresh ids and times that.
pub fn measure(tasks: usize) -> Result<WriterFloor> {
    let writes = record()?;
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("floor.sqlite3"))?;
    let started = Instant::now();
    for n in 0..tasks {
        replay(&store, &format!("floor-{n:08}"), &writes)?;
    }
    Ok(WriterFloor {
        tasks_per_second: per_second(tasks as u64, started.elapsed()),
        writes_per_task: writes.len(),
    })
}

/// One write transaction of the recorded task.
enum Recorded {
    Create(Box<TaskRecord>),
    Apply(Guard, Vec<Write>),
}

#[derive(Default)]
struct Recorder(RefCell<Vec<Recorded>>);

impl StoreObserver for Recorder {
    fn before(&self, call: StoreCall<'_>) -> std::result::Result<(), StoreError> {
        let recorded = match call {
            StoreCall::Create { task } => Recorded::Create(Box::new(task.clone())),
            StoreCall::Apply { guard, writes, .. } => Recorded::Apply(guard, writes.to_vec()),
            _ => return Ok(()),
        };
        self.0.borrow_mut().push(recorded);
        Ok(())
    }
}

/// The writes of one task from its creation until it parks in its sleep.
fn record() -> Result<Vec<Recorded>> {
    let dir = tempfile::tempdir()?;
    let recorder = Rc::new(Recorder::default());
    let sqlite = SqliteStore::open(dir.path().join("record.sqlite3"))?;
    let store = Rc::new(ObservedStore::new(sqlite, Rc::clone(&recorder)));
    let registry = TaskRegistry::new().register(TaskDefinition::new("park", |cx, input| {
        Box::pin(park(cx, input))
    }));
    let mut harness = Harness::with_store(registry, store);
    let id = harness.create("park", json!({}));
    harness.run_until_idle();
    if harness.status(&id) != TaskStatus::Working {
        return Err("the recorded task did not park in its sleep".into());
    }
    Ok(recorder.0.take())
}

async fn park(cx: &TaskContext, _input: Value) -> std::result::Result<Value, TaskError> {
    cx.sleep("compute", Duration::from_secs(3_000)).await?;
    Ok(json!({ "content": [] }))
}

/// Writes the recorded task anew under `task_id`.
fn replay(store: &SqliteStore, task_id: &str, writes: &[Recorded]) -> Result<()> {
    for write in writes {
        match write {
            Recorded::Create(task) => {
                let mut task = (**task).clone();
                task.task_id = task_id.to_owned();
                store.create(&task)?;
            }
            Recorded::Apply(guard, writes) => {
                // A task row carries its id: the row written is the one it names.
                let writes: Vec<Write> = writes
                    .iter()
                    .map(|write| match write {
                        Write::PutTask(task) => {
                            let mut task = task.clone();
                            task.task_id = task_id.to_owned();
                            Write::PutTask(task)
                        }
                        other => other.clone(),
                    })
                    .collect();
                if store.apply(task_id, *guard, &writes)? == Applied::Stale {
                    return Err(format!("a replayed write of {task_id} was turned away").into());
                }
            }
        }
    }
    Ok(())
}
