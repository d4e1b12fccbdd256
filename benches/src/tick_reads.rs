//! How many times the engine reads a task's rows in one tick of its wake-up, counted on a
//! SQLite store: a test (below) holds the counts, and `cargo xtask bench` prints them.
//!
//! A tick's reads are what a Durable Object's alarm costs besides the body (the Cloudflare
//! runner ticks its one task through the same engine, plus one scan of the object's task ids
//! per alarm), so they are counted, not timed: the figures are exact and the same on every
//! machine. Each scenario creates one task on a fresh store, brings it to the moment before
//! the tick, and counts the store calls of that tick alone.

use std::cell::Cell;
use std::fmt::Write;
use std::rc::Rc;
use std::time::Duration;

use durable_mcp::native::SqliteStore;
use durable_mcp::store::{LoadScope, StoreError};
use durable_mcp::testing::{Harness, ObservedStore, StoreCall, StoreObserver};
use durable_mcp::{TaskContext, TaskDefinition, TaskError, TaskRegistry, TaskStatus};
use futures_util::FutureExt;
use serde_json::{Value, json};
use xtask::Result;

const TASK: &str = "reads";

/// Prints the table, as `cargo xtask bench` shows it.
pub fn print() -> Result<()> {
    print!(
        "\nstore reads in one tick of a task's wake-up (native engine, SQLite)\n{}",
        table()?
    );
    Ok(())
}

/// The counts of every scenario, one line each under a heading.
fn table() -> Result<String> {
    let mut table = String::new();
    let mut line = |cells: [&dyn std::fmt::Display; 5]| {
        let [tick, loads, full, control, writes] = cells;
        writeln!(
            table,
            "{tick:<44} {loads:>6} {full:>8} {control:>8} {writes:>7}"
        )
    };
    line([&"tick", &"loads", &"full", &"control", &"writes"])?;
    for scenario in Scenario::ALL {
        let counts = scenario.count()?;
        let (full, control) = (counts.full.get(), counts.control.get());
        let writes = counts.applies.get();
        line([
            &scenario.name(),
            &(full + control),
            &full,
            &control,
            &writes,
        ])?;
    }
    Ok(table)
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
    fn count(self) -> Result<Counts> {
        let dir = tempfile::tempdir()?;
        let counts = Rc::new(Counts::default());
        let sqlite = SqliteStore::open(dir.path().join("reads.db"))?;
        let store = Rc::new(ObservedStore::new(sqlite, counts.clone()));
        let registry = TaskRegistry::new().register(
            TaskDefinition::new(TASK, |cx, input| Box::pin(body(cx, input)))
                .ttl(Some(Duration::from_secs(60))),
        );
        let mut harness = Harness::with_store(registry, store);
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
        counts.reset();
        if tick.is_zero() {
            // Nothing is due, so the tick runs no body and finishes at its first poll.
            let ticked = harness.engine().tick(&id).now_or_never();
            ticked.ok_or("an early tick waited")??;
        } else {
            harness.advance(tick);
        }
        let counted = counts.take();
        match self {
            Scenario::WakeAndComplete => check(&harness, &id, TaskStatus::Completed)?,
            Scenario::Purge if harness.engine().journal(&id)?.is_some() => {
                return Err("the task was not purged".into());
            }
            _ => {}
        }
        Ok(counted)
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

/// The store calls of a tick, as an [`ObservedStore`] shows them.
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

impl StoreObserver for Counts {
    fn before(&self, call: StoreCall<'_>) -> std::result::Result<(), StoreError> {
        let counter = match call {
            StoreCall::Load {
                scope: LoadScope::Full,
                ..
            } => &self.full,
            StoreCall::Load {
                scope: LoadScope::Control,
                ..
            } => &self.control,
            StoreCall::Apply { .. } => &self.applies,
            _ => return Ok(()),
        };
        counter.set(counter.get() + 1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// The reads of each kind of tick: a change to them is deliberate (`UPDATE_EXPECT=1`
    /// rewrites the table, which `cargo xtask bench` prints too).
    #[test]
    fn a_tick_reads_what_it_did() {
        expect_test::expect![[r#"
            tick                                          loads     full  control  writes
            a sleep ends, the body runs and completes         2        1        1       3
            a finished task's retention ends: purge           1        1        0       0
            nothing is due yet                                1        1        0       0
        "#]]
        .assert_eq(&super::table().unwrap());
    }
}
