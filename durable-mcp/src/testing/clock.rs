//! Virtual time: a clock that moves only when told, timers that fire when it passes them, and
//! a scheduler that records each task's wake-up.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::core::Timestamp;
use crate::runtime::{Clock, LocalBoxFuture, Scheduler, Timer};

/// 2026-01-01T00:00:00Z, where virtual time starts.
pub const VIRTUAL_EPOCH: Timestamp = Timestamp(1_767_225_600_000);

/// A clock and timer source on virtual time. Share it as `Rc<VirtualClock>`.
#[derive(Debug)]
pub struct VirtualClock {
    now: Cell<Timestamp>,
    next_timer: Cell<u64>,
    timers: RefCell<BTreeMap<u64, (Timestamp, Option<Waker>)>>,
}

impl VirtualClock {
    /// A clock at [`VIRTUAL_EPOCH`].
    pub fn new() -> Rc<Self> {
        Rc::new(VirtualClock {
            now: Cell::new(VIRTUAL_EPOCH),
            next_timer: Cell::new(0),
            timers: RefCell::default(),
        })
    }

    /// Moves the clock to `at` (never backwards) and wakes the timers due by then.
    pub fn set(&self, at: Timestamp) {
        if at > self.now.get() {
            self.now.set(at);
        }
        let due: Vec<Waker> = self
            .timers
            .borrow_mut()
            .values_mut()
            .filter(|(when, _)| *when <= at)
            .filter_map(|(_, waker)| waker.take())
            .collect();
        due.into_iter().for_each(Waker::wake);
    }

    /// The earliest pending timer.
    pub fn next_timer(&self) -> Option<Timestamp> {
        self.timers.borrow().values().map(|(at, _)| *at).min()
    }

    /// Whether any timer is pending.
    pub fn has_timers(&self) -> bool {
        !self.timers.borrow().is_empty()
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        self.now.get()
    }
}

/// A [`Timer`] on a shared [`VirtualClock`].
#[derive(Clone, Debug)]
pub struct VirtualTimer(pub Rc<VirtualClock>);

impl Timer for VirtualTimer {
    fn delay(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        let clock = self.0.clone();
        let id = clock.next_timer.get();
        clock.next_timer.set(id + 1);
        let at = clock.now().saturating_add(duration);
        clock.timers.borrow_mut().insert(id, (at, None));
        Box::pin(VirtualDelay { clock, id, at })
    }
}

struct VirtualDelay {
    clock: Rc<VirtualClock>,
    id: u64,
    at: Timestamp,
}

impl Future for VirtualDelay {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.clock.now() >= self.at {
            self.clock.timers.borrow_mut().remove(&self.id);
            return Poll::Ready(());
        }
        if let Some(entry) = self.clock.timers.borrow_mut().get_mut(&self.id) {
            entry.1 = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for VirtualDelay {
    fn drop(&mut self) {
        self.clock.timers.borrow_mut().remove(&self.id);
    }
}

/// A [`Scheduler`] that remembers each task's one wake-up, for a harness to fire.
#[derive(Debug, Default)]
pub struct RecordingScheduler {
    wakes: RefCell<BTreeMap<String, Timestamp>>,
}

impl RecordingScheduler {
    /// The task's wake-up, if set.
    pub fn wake_of(&self, task_id: &str) -> Option<Timestamp> {
        self.wakes.borrow().get(task_id).copied()
    }

    /// Every set wake-up, by task id.
    pub fn wakes(&self) -> BTreeMap<String, Timestamp> {
        self.wakes.borrow().clone()
    }

    /// Forgets every wake-up (as a host that died does).
    pub fn clear(&self) {
        self.wakes.borrow_mut().clear();
    }

    /// Removes and returns the wake-up of `task_id` if it is due at `now`.
    pub fn take_due(&self, task_id: &str, now: Timestamp) -> bool {
        let mut wakes = self.wakes.borrow_mut();
        if wakes.get(task_id).is_some_and(|at| *at <= now) {
            wakes.remove(task_id);
            return true;
        }
        false
    }
}

impl Scheduler for RecordingScheduler {
    fn schedule(&self, task_id: &str, at: Option<Timestamp>) {
        let mut wakes = self.wakes.borrow_mut();
        match at {
            Some(at) => wakes.insert(task_id.to_owned(), at),
            None => wakes.remove(task_id),
        };
    }
}
