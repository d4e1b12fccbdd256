//! How often a running body yields to its host's event loop.
//!
//! A body whose steps finish without waiting never gives the event loop a turn, and a Durable
//! Object serves a `tasks/get` only between turns. Each yield costs something, though: about
//! 4 ms in a Durable Object under workerd, as measured by `cargo xtask bench`. So the body
//! yields after a batch of journal writes whose size adapts to
//! the time one batch and its yield took, aiming at [`CYCLE`]. The time is read after the
//! yield, because a Worker's clock moves only across I/O.

use std::cell::Cell;
use std::time::Duration;

use crate::core::Timestamp;

/// The time one batch of writes and its yield should take.
pub(crate) const CYCLE: Duration = Duration::from_millis(10);
/// The first batch, and the smallest.
const MIN_BATCH: u32 = 64;
/// The largest batch: a bound on how long other requests wait for the body. A Durable Object
/// holds a reply until the writes before it are committed, at the next yield, so a request
/// can wait up to about two cycles.
const MAX_BATCH: u32 = 512;

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
            batch: Cell::new(MIN_BATCH),
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

/// The next batch size after a batch of `batch` writes and its yield took `cycle`: doubled
/// while a cycle is shorter than [`CYCLE`], halved once it is more than twice that.
fn next_batch(batch: u32, cycle: Duration) -> u32 {
    if cycle < CYCLE {
        (batch * 2).min(MAX_BATCH)
    } else if cycle > CYCLE * 2 {
        (batch / 2).max(MIN_BATCH)
    } else {
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_grow_while_cycles_are_short_and_shrink_when_long() {
        let ms = Duration::from_millis;
        assert_eq!(next_batch(64, ms(6)), 128);
        assert_eq!(next_batch(MAX_BATCH, ms(1)), MAX_BATCH);
        assert_eq!(next_batch(512, ms(15)), 512);
        assert_eq!(next_batch(512, ms(45)), 256);
        assert_eq!(next_batch(64, ms(500)), MIN_BATCH);
    }

    #[test]
    fn a_yield_is_due_after_each_batch() {
        let pacer = Pacer::new(Timestamp(0));
        let due: Vec<bool> = (0..MIN_BATCH).map(|_| pacer.wrote()).collect();
        assert_eq!(due.iter().filter(|due| **due).count(), 1);
        assert!(due[MIN_BATCH as usize - 1]);
        // A quick cycle doubles the batch: the next yield comes after twice as many writes.
        pacer.yielded(Timestamp(5));
        let writes_to_yield = (1..).find(|_| pacer.wrote()).unwrap();
        assert_eq!(writes_to_yield, 2 * MIN_BATCH);
    }
}
