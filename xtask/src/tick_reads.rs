//! `cargo xtask bench reads` (and a table of `cargo xtask bench`): how many times the engine
//! reads a task's rows in one tick of its wake-up, counted on a SQLite store.
//!
//! A tick's reads are what a Durable Object's alarm costs besides the body (the Cloudflare
//! runner ticks its one task through the same engine, plus one scan of the object's task ids
//! per alarm), so they are counted, not timed: the figures are exact and the same on every
//! machine. Each scenario creates one task on a fresh store, brings it to the moment before
//! the tick, and counts the store calls of that tick alone.

use std::cell::Cell;
use std::error::Error;
use std::rc::Rc;
use std::time::Duration;

use durable_mcp::native::SqliteStore;
use durable_mcp::store::{
    Applied, Guard, InputRow, ListPosition, LoadScope, Store, StoreError, TaskRecord, TaskState,
    Write,
};
use durable_mcp::testing::Harness;
use durable_mcp::{TaskContext, TaskDefinition, TaskError, TaskRegistry, TaskStatus};
use futures_util::FutureExt;
use serde_json::{Value, json};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const TASK: &str = "reads";

/// Prints the table.
pub fn run() -> Result<()> {
    println!("\nstore reads in one tick of a task's wake-up (native engine, SQLite)");
    println!(
        "{:<44} {:>6} {:>8} {:>8} {:>7}",
        "tick", "loads", "full", "control", "writes"
    );
    for scenario in Scenario::ALL {
        let counts = scenario.count()?;
        println!(
            "{:<44} {:>6} {:>8} {:>8} {:>7}",
            scenario.name(),
            counts.full.get() + counts.control.get(),
            counts.full.get(),
            counts.control.get(),
            counts.applies.get()
        );
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Scenario {
    /// The task sleeps; the tick ends the sleep and the body completes.
    WakeAndComplete,
    /// The task completed; the tick after its retention deletes it.
    Purge,
    /// The tick fires before anything is due.
    Early,
}

impl Scenario {
    const ALL: [Scenario; 3] = [Scenario::WakeAndComplete, Scenario::Purge, Scenario::Early];

    fn name(self) -> &'static str {
        match self {
            Scenario::WakeAndComplete => "a sleep ends, the body runs and completes",
            Scenario::Purge => "a finished task's retention ends: purge",
            Scenario::Early => "nothing is due yet",
        }
    }

    /// Runs the scenario and returns the calls of its one counted tick.
    fn count(self) -> Result<Rc<Counts>> {
        let dir = tempfile::tempdir()?;
        let store = Rc::new(CountingStore::new(SqliteStore::open(
            dir.path().join("reads.db"),
        )?));
        let registry = TaskRegistry::new().register(
            TaskDefinition::new(TASK, |cx, input| Box::pin(body(cx, input)))
                .ttl(Some(Duration::from_secs(60))),
        );
        let mut harness = Harness::with_store(registry, store.clone());
        let id = harness.create(TASK, json!({}));
        harness.run_until_idle();
        let tick = match self {
            Scenario::WakeAndComplete => Duration::from_secs(1),
            Scenario::Purge => {
                harness.advance(Duration::from_secs(1));
                check(&harness, &id, TaskStatus::Completed)?;
                Duration::from_secs(60)
            }
            Scenario::Early => Duration::ZERO,
        };
        store.counts.reset();
        if tick.is_zero() {
            // Nothing is due, so the tick runs no body and finishes at its first poll.
            let ticked = harness.engine().tick(&id).now_or_never();
            ticked.ok_or("an early tick waited")??;
        } else {
            harness.advance(tick);
        }
        let counts = Rc::new(store.counts.take());
        match self {
            Scenario::WakeAndComplete => check(&harness, &id, TaskStatus::Completed)?,
            Scenario::Purge if harness.engine().journal(&id)?.is_some() => {
                return Err("the task was not purged".into());
            }
            _ => {}
        }
        Ok(counts)
    }
}

/// The task: a one-second sleep, then done.
async fn body(cx: &TaskContext, _input: Value) -> std::result::Result<Value, TaskError> {
    cx.sleep("nap", "1s").await?;
    Ok(json!({ "done": true }))
}

fn check(harness: &Harness, task_id: &str, expected: TaskStatus) -> Result<()> {
    let status = harness.status(task_id);
    if status != expected {
        return Err(format!("the task is {status:?}, expected {expected:?}").into());
    }
    Ok(())
}

/// The store calls of a tick.
#[derive(Default)]
struct Counts {
    full: Cell<u64>,
    control: Cell<u64>,
    applies: Cell<u64>,
}

impl Counts {
    fn reset(&self) {
        self.take();
    }

    fn take(&self) -> Counts {
        Counts {
            full: Cell::new(self.full.take()),
            control: Cell::new(self.control.take()),
            applies: Cell::new(self.applies.take()),
        }
    }
}

/// A store that counts the calls a tick makes and passes every call on.
struct CountingStore {
    inner: SqliteStore,
    counts: Counts,
}

impl CountingStore {
    fn new(inner: SqliteStore) -> Self {
        CountingStore {
            inner,
            counts: Counts::default(),
        }
    }
}

fn bump(cell: &Cell<u64>) {
    cell.set(cell.get() + 1);
}

impl Store for CountingStore {
    fn create(&self, task: &TaskRecord) -> std::result::Result<TaskRecord, StoreError> {
        self.inner.create(task)
    }

    fn load(
        &self,
        task_id: &str,
        scope: LoadScope,
    ) -> std::result::Result<Option<TaskState>, StoreError> {
        match scope {
            LoadScope::Full => bump(&self.counts.full),
            LoadScope::Control => bump(&self.counts.control),
        }
        self.inner.load(task_id, scope)
    }

    fn load_input(
        &self,
        task_id: &str,
        key: &str,
    ) -> std::result::Result<Option<InputRow>, StoreError> {
        self.inner.load_input(task_id, key)
    }

    fn apply(
        &self,
        task_id: &str,
        guard: Guard,
        writes: &[Write],
    ) -> std::result::Result<Applied, StoreError> {
        bump(&self.counts.applies);
        self.inner.apply(task_id, guard, writes)
    }

    fn flush(&self) -> std::result::Result<(), StoreError> {
        self.inner.flush()
    }

    fn purge(&self, task_id: &str) -> std::result::Result<(), StoreError> {
        self.inner.purge(task_id)
    }

    fn task_ids(&self) -> std::result::Result<Vec<String>, StoreError> {
        self.inner.task_ids()
    }

    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> std::result::Result<Vec<TaskRecord>, StoreError> {
        self.inner.list_tasks(scope, after, limit)
    }
}
