//! Rows for the unit tests of the scheduling and tick decisions.

use std::collections::BTreeMap;
use std::time::Duration;

use super::control::test_task;
use super::journal::{InputRow, StepKind, StepRow, StepStatus, TaskState};
use super::time::Timestamp;

/// The creation time of [`state`]'s task.
pub const T0: Timestamp = Timestamp(1_000_000);

/// `offset` milliseconds after [`T0`].
pub const fn at(offset: u64) -> Timestamp {
    Timestamp(T0.0 + offset)
}

/// A working task created at [`T0`] with a one-hour retention, and no journal.
pub fn state() -> TaskState {
    TaskState {
        task: test_task(T0, Some(Duration::from_secs(3600))),
        steps: BTreeMap::new(),
        inputs: BTreeMap::new(),
    }
}

/// A pending step of `kind` due at `when` (a retry of a `do` step, the end of a sleep).
pub fn pending(key: &str, kind: StepKind, when: Timestamp) -> StepRow {
    StepRow {
        key: key.into(),
        kind,
        status: StepStatus::Pending,
        result: None,
        attempt: 1,
        next_attempt_at: (kind == StepKind::Do).then_some(when),
        wake_at: (kind == StepKind::Sleep).then_some(when),
        last_error: None,
        seq: 1,
        created_at: T0,
        completed_at: None,
    }
}

/// An unanswered elicitation, timing out at `timeout_at` if given.
pub fn elicit(key: &str, timeout_at: Option<Timestamp>) -> InputRow {
    InputRow {
        key: key.into(),
        request: "{}".into(),
        response: None,
        answered: false,
        answered_at: None,
        timeout_at,
        timed_out: false,
        blocking: true,
        consumed: false,
        seq: 2,
        created_at: T0,
    }
}
