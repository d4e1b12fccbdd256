//! How often a running body yields to its host's event loop.
//!
//! A body whose steps finish without waiting never gives the event loop a turn, and a Durable
//! Object serves a `tasks/get` only between turns. Each yield has a cost, though: in a Durable
//! Object it also ends the turn, whose writes are then committed. So the body yields only after
//! a batch of journal writes, and [`Pacer`] sizes each batch from the time the last batch and
//! its yield took, aiming at [`CYCLE`]: often enough that other requests are served, rarely
//! enough that yielding stays a small part of the body's time. Batches change by at most a
//! factor of [`MAX_STEP`] a cycle, within [`MIN_BATCH`] and [`MAX_BATCH`]. The time is read
//! after the yield, because a Worker's clock moves only across I/O.

use std::cell::Cell;
use std::time::Duration;

use crate::core::Timestamp;

/// The time one batch of writes and its yield should take.
pub(crate) const CYCLE: Duration = Duration::from_millis(10);
/// The first batch: large, because a step that awaits nothing costs little next to the commit
/// of the object's writes that every yield in a Durable Object also makes: starting small and
/// doubling put several yields into a short run, and they took as long as its steps.
/// `cargo xtask bench worker` measures a step's cost in an object and the slowest `tasks/get`
/// during a long run of steps.
const FIRST_BATCH: u32 = 1024;
/// The smallest batch, for steps that take milliseconds without awaiting anything.
const MIN_BATCH: u32 = 16;
/// The largest batch: a bound on how long other requests wait for the body. A Durable Object
/// holds a reply until the writes before it are committed, at the next yield, so a request
/// can wait up to about two cycles.
const MAX_BATCH: u32 = 8192;
/// The most a batch grows or shrinks from one cycle to the next.
const MAX_STEP: u32 = 4;

/// The pace of one activation's yields.
#[derive(Debug)]
pub(crate) struct Pacer {
    batch: Cell<u32>,
    written: Cell<u32>,
    cycle_started: Cell<Timestamp>,
}

impl Pacer {
    /// A pacer for an activation started at `now`.
    pub(crate) fn new(now: Timestamp) -> Self {
        Pacer {
            batch: Cell::new(FIRST_BATCH),
            written: Cell::new(0),
            cycle_started: Cell::new(now),
        }
    }

    /// Counts one journal write; true when the body should yield now.
    pub(crate) fn wrote(&self) -> bool {
        let written = self.written.get() + 1;
        let due = written >= self.batch.get();
        self.written.set(if due { 0 } else { written });
        due
    }

    /// Records that the body yielded and it is `now`: sizes the next batch.
    pub(crate) fn yielded(&self, now: Timestamp) {
        let cycle = now.saturating_since(self.cycle_started.replace(now));
        self.batch.set(next_batch(self.batch.get(), cycle));
    }
}

/// The next batch size after a batch of `batch` writes and its yield took `cycle`: scaled so
/// that the next cycle takes [`CYCLE`], by at most [`MAX_STEP`] times either way.
fn next_batch(batch: u32, cycle: Duration) -> u32 {
    let cycle = cycle.max(Duration::from_millis(1));
    let scaled = u128::from(batch) * CYCLE.as_micros() / cycle.as_micros();
    let scaled = u32::try_from(scaled).unwrap_or(u32::MAX);
    scaled
        .clamp(batch / MAX_STEP, batch.saturating_mul(MAX_STEP))
        .clamp(MIN_BATCH, MAX_BATCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_scaled_towards_one_cycle() {
        let ms = Duration::from_millis;
        assert_eq!(next_batch(1024, ms(5)), 2048);
        assert_eq!(next_batch(1024, ms(10)), 1024);
        assert_eq!(next_batch(1024, ms(40)), 256);
        // At most four times either way, and within the bounds.
        assert_eq!(next_batch(1024, ms(0)), 4096);
        assert_eq!(next_batch(1024, ms(1000)), 256);
        assert_eq!(next_batch(MAX_BATCH, ms(1)), MAX_BATCH);
        assert_eq!(next_batch(MIN_BATCH, ms(500)), MIN_BATCH);
    }

    #[test]
    fn a_yield_is_due_after_each_batch() {
        let pacer = Pacer::new(Timestamp(0));
        let due: Vec<bool> = (0..FIRST_BATCH).map(|_| pacer.wrote()).collect();
        assert_eq!(due.iter().filter(|due| **due).count(), 1);
        assert!(due[FIRST_BATCH as usize - 1]);
        // A cycle of half the target doubles the batch: the next yield comes after twice as
        // many writes.
        pacer.yielded(Timestamp(5));
        let writes_to_yield = (1..).find(|_| pacer.wrote()).unwrap();
        assert_eq!(writes_to_yield, 2 * FIRST_BATCH);
    }
}
