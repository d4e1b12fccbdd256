//! The native host's scheduler: each task's one wake-up, kept in memory and fired by a timer
//! loop that ticks the engine. The store is the truth; after a restart
//! [`Engine::recover`](crate::runtime::Engine::recover) rebuilds these wake-ups from it.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::core::Timestamp;
use crate::runtime::Engine;
use crate::runtime::Scheduler;

/// The wake-ups of every task, earliest first.
#[derive(Debug, Default)]
pub struct WakeScheduler {
    wakes: RefCell<Wakes>,
    changed: Notify,
    running: Cell<usize>,
    idle: Notify,
}

#[derive(Debug, Default)]
struct Wakes {
    by_time: BTreeSet<(Timestamp, String)>,
    by_task: HashMap<String, Timestamp>,
}

impl Scheduler for WakeScheduler {
    fn schedule(&self, task_id: &str, at: Option<Timestamp>) {
        let mut wakes = self.wakes.borrow_mut();
        if let Some(previous) = wakes.by_task.remove(task_id) {
            wakes.by_time.remove(&(previous, task_id.to_owned()));
        }
        if let Some(at) = at {
            wakes.by_task.insert(task_id.to_owned(), at);
            wakes.by_time.insert((at, task_id.to_owned()));
        }
        drop(wakes);
        self.changed.notify_one();
    }
}

impl WakeScheduler {
    /// An empty scheduler.
    pub fn new() -> Rc<Self> {
        Rc::new(WakeScheduler::default())
    }

    /// Fires wake-ups forever: each due task is ticked in its own local task. Runs inside a
    /// `tokio::task::LocalSet`.
    pub async fn run(self: Rc<Self>, engine: Rc<Engine>) {
        loop {
            let now = engine.host().clock.now();
            let due = self.take_due(now);
            for task_id in due {
                self.running.set(self.running.get() + 1);
                let (scheduler, engine) = (Rc::clone(&self), Rc::clone(&engine));
                tokio::task::spawn_local(async move {
                    if let Err(error) = engine.tick(&task_id).await {
                        // The store failed; try again shortly rather than lose the task.
                        eprintln!("durable-mcp: task {task_id}: {error}; retrying in 1s");
                        let retry = engine
                            .host()
                            .clock
                            .now()
                            .saturating_add(Duration::from_secs(1));
                        scheduler.schedule(&task_id, Some(retry));
                    }
                    scheduler.running.set(scheduler.running.get() - 1);
                    scheduler.idle.notify_waiters();
                });
            }
            let next = self.wakes.borrow().by_time.first().map(|(at, _)| *at);
            let changed = self.changed.notified();
            match next {
                Some(at) => {
                    let wait = at.saturating_since(engine.host().clock.now());
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Waits until no activation runs, or `limit` passes.
    pub async fn settle(&self, limit: Duration) {
        let wait = async {
            while self.running.get() > 0 {
                self.idle.notified().await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }

    fn take_due(&self, now: Timestamp) -> Vec<String> {
        let mut wakes = self.wakes.borrow_mut();
        let mut due = Vec::new();
        while let Some((at, _)) = wakes.by_time.first()
            && *at <= now
        {
            let (_, task_id) = wakes.by_time.pop_first().expect("first exists");
            wakes.by_task.remove(&task_id);
            due.push(task_id);
        }
        due
    }
}
