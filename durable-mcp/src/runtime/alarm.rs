//! A host's memory of its one alarm, kept apart from the platform so that it is tested
//! natively.

use std::cell::Cell;

use crate::core::Timestamp;

/// What a host last asked its one alarm to be, so that a [`Scheduler`](super::Scheduler)
/// skips a write that would change nothing, and never takes a failed write for done.
///
/// A Durable Object's `setAlarm` is issued without awaiting it: the host calls
/// [`AlarmMemory::written`] as it issues a write, and [`AlarmMemory::failed`] if the write is
/// refused later. A failed write is forgotten (unless a later write replaced it), so the next
/// [`AlarmMemory::needs_write`] of the same time asks for the write again.
#[derive(Debug, Default)]
pub struct AlarmMemory {
    /// `None`: nothing known; `Some(None)`: no alarm; `Some(Some(at))`: the alarm at `at`.
    current: Cell<Option<Option<Timestamp>>>,
}

impl AlarmMemory {
    /// A memory that knows nothing: the first schedule always writes.
    pub const fn new() -> Self {
        AlarmMemory {
            current: Cell::new(None),
        }
    }

    /// Whether setting the alarm to `at` (`None`: no alarm) needs a write.
    pub fn needs_write(&self, at: Option<Timestamp>) -> bool {
        self.current.get() != Some(at)
    }

    /// A write of `at` was issued: it is remembered as set.
    pub fn written(&self, at: Option<Timestamp>) {
        self.current.set(Some(at));
    }

    /// The write of `at` failed: it is forgotten, unless a later write replaced it, so that
    /// the next [`AlarmMemory::needs_write`] of `at` asks for the write again.
    pub fn failed(&self, at: Option<Timestamp>) {
        if self.current.get() == Some(at) {
            self.current.set(None);
        }
    }

    /// What is remembered: `None` if nothing, `Some(None)` if the alarm was deleted.
    pub fn remembered(&self) -> Option<Option<Timestamp>> {
        self.current.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: u64) -> Option<Timestamp> {
        Some(Timestamp::from_millis(millis))
    }

    #[test]
    fn a_write_that_changes_nothing_is_skipped() {
        let memory = AlarmMemory::new();
        assert!(memory.needs_write(at(5)));
        assert!(memory.needs_write(None), "not even a deletion is known");
        memory.written(at(5));
        assert!(!memory.needs_write(at(5)));
        assert!(memory.needs_write(at(6)));
        assert!(memory.needs_write(None));
        memory.written(None);
        assert!(!memory.needs_write(None));
        assert_eq!(memory.remembered(), Some(None));
    }

    #[test]
    fn a_failed_write_is_written_again() {
        let memory = AlarmMemory::new();
        memory.written(at(5));
        memory.failed(at(5));
        assert_eq!(memory.remembered(), None);
        assert!(memory.needs_write(at(5)), "the next schedule sets it again");

        memory.written(None);
        memory.failed(None);
        assert!(memory.needs_write(None), "a failed deletion too");
    }

    #[test]
    fn a_failure_does_not_forget_a_later_write() {
        let memory = AlarmMemory::new();
        memory.written(at(5));
        memory.written(at(9));
        memory.failed(at(5));
        assert_eq!(memory.remembered(), Some(at(9)));
        assert!(!memory.needs_write(at(9)));
    }
}
