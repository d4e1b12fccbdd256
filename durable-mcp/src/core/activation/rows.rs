//! The step rows the machine records when new ground is broken.

use crate::core::journal::{StepKind, StepRow, StepStatus};
use crate::core::time::Timestamp;

/// The row of a sleep just asked for, waiting until `wake_at`.
pub(super) fn pending_sleep(key: &str, wake_at: Timestamp, seq: u64, now: Timestamp) -> StepRow {
    StepRow {
        wake_at: Some(wake_at),
        status: StepStatus::Pending,
        completed_at: None,
        ..finished(key, StepKind::Sleep, seq, now)
    }
}

/// The row of a check that saw `answer` (JSON text; `None` for no answer).
pub(super) fn check(key: &str, answer: Option<String>, seq: u64, now: Timestamp) -> StepRow {
    StepRow {
        result: Some(answer.unwrap_or_else(|| "null".to_owned())),
        ..finished(key, StepKind::Check, seq, now)
    }
}

/// The row of a value the context recorded under its own `key` (JSON text).
pub(super) fn value(key: &str, value: String, seq: u64, now: Timestamp) -> StepRow {
    StepRow {
        result: Some(value),
        ..finished(key, StepKind::Value, seq, now)
    }
}

/// A value row kept pending (every load scope holds it) with nothing in it: a mark the
/// schedule reads, such as `$stopped:<key>`.
pub(super) fn pending_value(key: &str, seq: u64, now: Timestamp) -> StepRow {
    StepRow {
        status: StepStatus::Pending,
        completed_at: None,
        ..finished(key, StepKind::Value, seq, now)
    }
}

/// The row of a compensation just registered: a `do` step pending its first attempt, which
/// runs only if the task is cancelled.
pub(super) fn registered(key: &str, seq: u64, now: Timestamp) -> StepRow {
    StepRow {
        status: StepStatus::Pending,
        completed_at: None,
        ..finished(key, StepKind::Do, seq, now)
    }
}

/// The row holding a cleanup's `deadline`, pending until the task is settled.
pub(super) fn cleanup_deadline(
    key: &str,
    deadline: Timestamp,
    seq: u64,
    now: Timestamp,
) -> StepRow {
    StepRow {
        status: StepStatus::Pending,
        wake_at: Some(deadline),
        completed_at: None,
        ..finished(key, StepKind::Value, seq, now)
    }
}

/// The row of attempt `number` of a `do` step, completed now without a result yet. A row
/// recorded by an earlier attempt keeps its sequence number and creation time.
pub(super) fn attempt(
    key: &str,
    number: u32,
    earlier: Option<&StepRow>,
    seq: u64,
    now: Timestamp,
) -> StepRow {
    let created = earlier.map_or((seq, now), |row| (row.seq, row.created_at));
    StepRow {
        attempt: number,
        created_at: created.1,
        ..finished(key, StepKind::Do, created.0, now)
    }
}

/// A row of `kind` created and completed now, with nothing else recorded.
fn finished(key: &str, kind: StepKind, seq: u64, now: Timestamp) -> StepRow {
    StepRow {
        key: key.to_owned(),
        kind,
        status: StepStatus::Completed,
        result: None,
        attempt: 0,
        next_attempt_at: None,
        wake_at: None,
        last_error: None,
        seq,
        created_at: now,
        completed_at: Some(now),
    }
}

/// The row of a child task about to be created: pending until the child's outcome arrives.
pub(super) fn child(key: &str, seq: u64, now: Timestamp) -> StepRow {
    StepRow {
        status: StepStatus::Pending,
        completed_at: None,
        ..finished(key, StepKind::Child, seq, now)
    }
}
