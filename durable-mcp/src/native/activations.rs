//! The wake-ups of one worker's tasks, and the bound on how many of their activations run at
//! once.
//!
//! Each task has at most one place in the queue. A task waits in one of three lanes once it is
//! due:
//!
//! - **requested**: a request woke it (an answer to its input request, a cancel), first come
//!   first served, so that a user waiting on it is not stuck behind a backlog;
//! - **due**: its wake-up time has come (a new task, a sleep or a retry that ended), earliest
//!   wake-up first;
//! - **recovered**: it was in the store when the host started and has not had its first tick
//!   yet, oldest first. That tick, the engine's first of the task, runs at once an activation
//!   that died with the last process (see [`Engine`]'s recovery).
//!
//! At most `max_running` activations run at once; each slot that frees goes to the next
//! non-empty lane in turn, so no lane waits for another to empty. The store is the truth:
//! nothing here is persisted, and the next start rebuilds the queue from the store.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::core::{Timestamp, trace};
use crate::runtime::Engine;
use crate::runtime::Scheduler;

/// How long a task whose tick failed (the store failed) waits before it is ticked again.
const RETRY_AFTER_STORE_FAILURE: Duration = Duration::from_secs(1);

/// The wake-ups and running activations of one worker's tasks.
#[derive(Debug)]
pub(crate) struct Activations {
    queue: RefCell<Queue>,
    max_running: usize,
    running: Cell<usize>,
    /// Something changed that may start an activation: a wake-up was set, a slot freed.
    changed: Notify,
    idle: Notify,
}

/// Where one task waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Not due before this time.
    Timer(Timestamp),
    /// Due since this time, in the due lane.
    Due(Timestamp),
    Requested,
    Recovered,
}

/// The lanes a free slot is offered to, in turn.
const LANES: [Lane; 3] = [Lane::Requested, Lane::Due, Lane::Recovered];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    Requested,
    Due,
    Recovered,
}

#[derive(Debug, Default)]
struct Queue {
    places: HashMap<String, Place>,
    timers: BTreeSet<(Timestamp, String)>,
    due: BTreeSet<(Timestamp, String)>,
    /// Tasks in the requested lane, and ids that left it since (skipped when reached).
    requested: VecDeque<String>,
    requested_count: usize,
    /// Tasks in the recovered lane, and ids that left it since (skipped when reached).
    recovered: VecDeque<String>,
    recovered_count: usize,
    /// The lane the last slot went to.
    last_lane: usize,
}

impl Queue {
    /// Takes the task out of wherever it waits.
    fn remove(&mut self, task_id: &str) {
        match self.places.remove(task_id) {
            Some(Place::Timer(at)) => {
                self.timers.remove(&(at, task_id.to_owned()));
            }
            Some(Place::Due(at)) => {
                self.due.remove(&(at, task_id.to_owned()));
            }
            // Left in its deque; skipped when reached.
            Some(Place::Requested) => self.requested_count -= 1,
            Some(Place::Recovered) => self.recovered_count -= 1,
            None => {}
        }
    }

    fn set_timer(&mut self, task_id: &str, at: Timestamp) {
        self.remove(task_id);
        self.places.insert(task_id.to_owned(), Place::Timer(at));
        self.timers.insert((at, task_id.to_owned()));
    }

    /// Moves every timer that is due at `now` to the due lane.
    fn promote(&mut self, now: Timestamp) {
        while let Some((at, _)) = self.timers.first()
            && *at <= now
        {
            let (at, task_id) = self.timers.pop_first().expect("first exists");
            self.places.insert(task_id.clone(), Place::Due(at));
            self.due.insert((at, task_id));
        }
    }

    /// Moves a due task to the requested lane.
    fn request(&mut self, task_id: &str, now: Timestamp) {
        match self.places.get(task_id) {
            Some(Place::Timer(at) | Place::Due(at)) if *at <= now => {}
            Some(Place::Recovered) => {}
            _ => return,
        }
        self.remove(task_id);
        self.places.insert(task_id.to_owned(), Place::Requested);
        self.requested.push_back(task_id.to_owned());
        self.requested_count += 1;
    }

    fn recover(&mut self, task_id: String) {
        if self.places.contains_key(&task_id) {
            return;
        }
        self.places.insert(task_id.clone(), Place::Recovered);
        self.recovered.push_back(task_id);
        self.recovered_count += 1;
    }

    /// The next task to tick, from the lane after the last one served that has a task.
    fn pop(&mut self) -> Option<String> {
        for offset in 1..=LANES.len() {
            let lane = (self.last_lane + offset) % LANES.len();
            if let Some(task_id) = self.pop_lane(LANES[lane]) {
                self.last_lane = lane;
                return Some(task_id);
            }
        }
        None
    }

    fn pop_lane(&mut self, lane: Lane) -> Option<String> {
        let (deque, place) = match lane {
            Lane::Due => {
                let (_, task_id) = self.due.pop_first()?;
                self.places.remove(&task_id);
                return Some(task_id);
            }
            Lane::Requested => (&mut self.requested, Place::Requested),
            Lane::Recovered => (&mut self.recovered, Place::Recovered),
        };
        while let Some(task_id) = deque.pop_front() {
            if self.places.get(&task_id) == Some(&place) {
                self.places.remove(&task_id);
                match lane {
                    Lane::Requested => self.requested_count -= 1,
                    _ => self.recovered_count -= 1,
                }
                return Some(task_id);
            }
        }
        None
    }
}

impl Scheduler for Activations {
    fn schedule(&self, task_id: &str, at: Option<Timestamp>) {
        let mut queue = self.queue.borrow_mut();
        match at {
            Some(at) => queue.set_timer(task_id, at),
            None => queue.remove(task_id),
        }
        drop(queue);
        self.changed.notify_one();
    }
}

impl Activations {
    /// An empty queue running at most `max_running` activations at once (at least one).
    pub(crate) fn new(max_running: usize) -> Rc<Self> {
        Rc::new(Activations {
            queue: RefCell::default(),
            max_running: max_running.max(1),
            running: Cell::new(0),
            changed: Notify::new(),
            idle: Notify::new(),
        })
    }

    /// Queues one tick for each of `task_ids` (found in the store at start), oldest first,
    /// unless the task already has a wake-up: the engine's first tick of a task recovers what
    /// the last process left running (see [`Engine`]'s recovery).
    pub(crate) fn recover(&self, task_ids: impl IntoIterator<Item = String>) {
        let mut queue = self.queue.borrow_mut();
        for task_id in task_ids {
            queue.recover(task_id);
        }
        drop(queue);
        self.changed.notify_one();
    }

    /// A request woke the task (an answer, a cancel): if it is due, it moves to the requested
    /// lane.
    pub(crate) fn requested(&self, task_id: &str, now: Timestamp) {
        self.queue.borrow_mut().request(task_id, now);
        self.changed.notify_one();
    }

    /// How many tasks are due, or woken by a request, and wait for a slot (the recovered lane
    /// is not counted: it only shrinks).
    pub(crate) fn waiting(&self, now: Timestamp) -> usize {
        let mut queue = self.queue.borrow_mut();
        queue.promote(now);
        queue.due.len() + queue.requested_count
    }

    /// How many activations run now.
    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        self.running.get()
    }

    /// Starts activations as slots free and wake-ups come due, forever: each in a local task
    /// of its own. Runs inside a `tokio::task::LocalSet`.
    pub(crate) async fn run(self: Rc<Self>, engine: Rc<Engine>) {
        loop {
            // Registered before the queue is read, so a change in between is not missed.
            let changed = self.changed.notified();
            let now = engine.host().clock.now();
            let next_timer = {
                let mut queue = self.queue.borrow_mut();
                queue.promote(now);
                while self.running.get() < self.max_running
                    && let Some(task_id) = queue.pop()
                {
                    self.start(&engine, task_id);
                }
                queue.timers.first().map(|(at, _)| *at)
            };
            match next_timer {
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

    fn start(self: &Rc<Self>, engine: &Rc<Engine>, task_id: String) {
        let slot = Slot::take(self);
        let engine = Rc::clone(engine);
        tokio::task::spawn_local(async move {
            if let Err(error) = engine.tick(&task_id).await {
                // The store failed; try again shortly rather than lose the task.
                trace::tick_failed(&task_id, &error);
                let activations = &slot.0;
                let retry = engine
                    .host()
                    .clock
                    .now()
                    .saturating_add(RETRY_AFTER_STORE_FAILURE);
                activations.schedule(&task_id, Some(retry));
            }
            drop(slot);
        });
    }

    /// Waits until no activation runs, or `limit` passes.
    pub(crate) async fn settle(&self, limit: Duration) {
        let wait = async {
            loop {
                let idle = self.idle.notified();
                if self.running.get() == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }
}

/// One running activation's slot, given back when its local task ends, a panic included.
struct Slot(Rc<Activations>);

impl Slot {
    fn take(activations: &Rc<Activations>) -> Self {
        activations.running.set(activations.running.get() + 1);
        Slot(Rc::clone(activations))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let activations = &self.0;
        activations.running.set(activations.running.get() - 1);
        activations.changed.notify_one();
        activations.idle.notify_waiters();
    }
}

#[cfg(test)]
mod tests;
