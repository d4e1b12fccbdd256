//! The activations running on one engine, by task.
//!
//! A task's wake-up can fire, or be fired again, while its body is still running on the same
//! engine: a tick then must not claim the task and run a second activation beside the first,
//! and a cancellation must not settle a task whose body has yet to observe it. The engine marks
//! a task while an activation of it runs, and asks this registry before either.
//!
//! A mark is dropped with the activation that set it, unless a later activation (claimed once
//! the earlier one's lease ran out) has replaced it. On a host that may stop polling an
//! activation without dropping it, marks also lapse when their lease ends, so such an
//! activation cannot block its task for ever.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::core::Timestamp;

/// Which activation of a task runs on this engine, and until when it counts as running.
#[derive(Clone, Copy, Debug)]
pub(super) struct InFlightMark {
    /// The generation (lease) of the activation.
    pub(super) generation: u64,
    /// When its lease ends: the claim's redelivery time.
    pub(super) expires_at: Timestamp,
}

/// The marks of the activations running on one engine.
#[derive(Debug, Default)]
pub(super) struct InFlightRegistry {
    marks: RefCell<HashMap<String, InFlightMark>>,
    /// Whether an activation stops counting as running once its lease is over.
    marks_expire: bool,
}

impl InFlightRegistry {
    /// From now on, an activation stops counting as running once its lease is over.
    pub(super) fn expire_marks_with_their_lease(&mut self) {
        self.marks_expire = true;
    }

    /// Marks `task_id` as running the activation of `mark` until the returned guard drops.
    pub(super) fn enter(&self, task_id: &str, mark: InFlightMark) -> InFlight<'_> {
        self.marks.borrow_mut().insert(task_id.to_owned(), mark);
        InFlight {
            marks: &self.marks,
            task_id: task_id.to_owned(),
            generation: mark.generation,
        }
    }

    /// Whether an activation of `task_id` is marked, and (when marks expire) its lease is not
    /// over at `now`.
    pub(super) fn is_running(&self, task_id: &str, now: Timestamp) -> bool {
        self.marks
            .borrow()
            .get(task_id)
            .is_some_and(|mark| !self.marks_expire || now < mark.expires_at)
    }
}

/// Keeps a task marked as running on this engine for as long as it lives.
pub(super) struct InFlight<'a> {
    marks: &'a RefCell<HashMap<String, InFlightMark>>,
    task_id: String,
    generation: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // A later activation (after this one's lease ran out) owns the mark now.
        let mut marks = self.marks.borrow_mut();
        if marks
            .get(&self.task_id)
            .is_some_and(|mark| mark.generation == self.generation)
        {
            marks.remove(&self.task_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{InFlightMark, InFlightRegistry};
    use crate::core::Timestamp;

    fn mark(generation: u64, expires_at: u64) -> InFlightMark {
        InFlightMark {
            generation,
            expires_at: Timestamp(expires_at),
        }
    }

    #[test]
    fn an_earlier_activation_ending_leaves_the_later_ones_mark() {
        let registry = InFlightRegistry::default();
        let earlier = registry.enter("t", mark(1, 10));
        let later = registry.enter("t", mark(2, 20));
        drop(earlier);
        assert!(registry.is_running("t", Timestamp(0)));
        drop(later);
        assert!(!registry.is_running("t", Timestamp(0)));
    }

    #[test]
    fn marks_lapse_with_their_lease_only_when_told_to() {
        let mut expiring = InFlightRegistry::default();
        expiring.expire_marks_with_their_lease();
        let lasting = InFlightRegistry::default();
        let _a = expiring.enter("t", mark(1, 10));
        let _b = lasting.enter("t", mark(1, 10));
        assert!(expiring.is_running("t", Timestamp(9)));
        assert!(!expiring.is_running("t", Timestamp(10)));
        assert!(lasting.is_running("t", Timestamp(10)));
    }
}
