//! Child tasks: a task a body starts and waits for, durably.
//!
//! The parent records a `child` row under the start's key before the child exists, then creates
//! the child under an id derived from its own id and that key ([`child_task_id`]), so a replay
//! or a crash never starts a second one, and records `$started:<key>` once it exists. The child's row carries a [`ParentLink`]. When the
//! child ends, its host delivers the outcome to the parent ([`plan_child_ended`]): the parent's
//! row finishes and the parent runs again. The child's link is marked notified once the parent
//! took it; until then every tick of the ended child delivers again (the parent keeps the
//! first).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::journal::{StepKind, StepRow, StepStatus, TaskState, Write};
use super::schedule::RunCause;
use super::task::{ParentLink, TaskFailure, TaskRecord, TaskStatus};
use super::time::Timestamp;

/// How a child task ended, as its parent's journal records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ChildOutcome {
    /// The child's body returned: its tool result (`content`, `structuredContent`, `isError`).
    Completed {
        /// The result object.
        result: Value,
    },
    /// The engine failed the child (an expiry, a non-determinism, a protocol error).
    Failed {
        /// Its error.
        error: TaskFailure,
    },
    /// The child was cancelled (by a client, or because its parent was).
    Cancelled,
    /// The child could not be created (its tool is not registered, its id is taken).
    Refused {
        /// Why.
        message: String,
    },
}

impl ChildOutcome {
    /// The outcome of an ended child task; `None` while it lives.
    pub fn of(task: &TaskRecord) -> Option<ChildOutcome> {
        Some(match task.status {
            TaskStatus::Working | TaskStatus::InputRequired => return None,
            TaskStatus::Completed => ChildOutcome::Completed {
                result: task
                    .result
                    .as_deref()
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or(Value::Null),
            },
            TaskStatus::Failed => ChildOutcome::Failed {
                error: task
                    .error
                    .clone()
                    .unwrap_or_else(|| TaskFailure::internal("the child task failed")),
            },
            TaskStatus::Cancelled => ChildOutcome::Cancelled,
        })
    }

    /// The outcome as its row stores it (JSON text).
    pub fn to_stored(&self) -> String {
        serde_json::to_string(self).expect("a child outcome is plain JSON")
    }

    /// The outcome a row stores; a row that holds none reads as a failure that says so.
    pub fn from_stored(text: Option<&str>) -> ChildOutcome {
        text.and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_else(|| ChildOutcome::Failed {
                error: TaskFailure::internal("the child's recorded outcome is unreadable"),
            })
    }
}

/// The id of the child a parent starts under `key`: 128 bits of SHA-256 over the parent's id
/// and the key, as 32 lowercase hex digits (the shape of every task id). The same on every
/// replay, so a start that runs again finds the child it created.
pub fn child_task_id(parent_id: &str, key: &str) -> String {
    let mut digest = Sha256::new();
    digest.update(b"durable-mcp child task\0");
    digest.update(parent_id.as_bytes());
    digest.update(b"\0");
    digest.update(key.as_bytes());
    digest.finalize()[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The writes that record a child's outcome in its parent: the parent's `child` row under `key`
/// finishes with `outcome`, and the parent runs again. Nothing when the row is not waiting (an
/// earlier delivery was taken, the parent cancelled the child, or the parent has ended).
pub fn plan_child_ended(
    state: &TaskState,
    key: &str,
    outcome: &ChildOutcome,
    now: Timestamp,
) -> Vec<Write> {
    let task = &state.task;
    let Some(row) = state.steps.get(key) else {
        return Vec::new();
    };
    if task.status.is_terminal() || row.kind != StepKind::Child || row.status != StepStatus::Pending
    {
        return Vec::new();
    }
    let mut record = task.clone();
    record.request_run(now, RunCause::ChildEnded);
    vec![
        Write::PutStep(ended_row(row, outcome, now)),
        Write::PutTask(record),
    ]
}

/// The `child` row `row` finished with `outcome`: completed for a completed child, failed
/// otherwise.
pub fn ended_row(row: &StepRow, outcome: &ChildOutcome, now: Timestamp) -> StepRow {
    let mut row = row.clone();
    row.status = match outcome {
        ChildOutcome::Completed { .. } => StepStatus::Completed,
        _ => StepStatus::Failed,
    };
    row.result = Some(outcome.to_stored());
    row.completed_at = Some(now);
    row
}

/// The parent a task must still report to: it has a parent, has ended, and the parent has not
/// taken its outcome yet.
pub fn undelivered(task: &TaskRecord) -> Option<(&ParentLink, ChildOutcome)> {
    let parent = task.parent.as_ref().filter(|parent| !parent.notified)?;
    Some((parent, ChildOutcome::of(task)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_rows::{at, pending, state};

    fn waiting_parent() -> TaskState {
        let mut s = state();
        s.steps
            .insert("resize".into(), pending("resize", StepKind::Child, at(0)));
        s
    }

    #[test]
    fn child_ids_are_stable_per_parent_and_key_and_shaped_like_task_ids() {
        let id = child_task_id("parent", "resize");
        assert_eq!(id, child_task_id("parent", "resize"));
        assert_eq!(id.len(), 32);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(id, child_task_id("parent", "resize#2"));
        assert_ne!(id, child_task_id("parent2", "resize"));
        // The separator keeps ("ab", "c") apart from ("a", "bc").
        assert_ne!(child_task_id("ab", "c"), child_task_id("a", "bc"));
    }

    #[test]
    fn an_outcome_finishes_the_waiting_row_once_and_runs_the_parent() {
        let s = waiting_parent();
        let outcome = ChildOutcome::Completed {
            result: serde_json::json!({ "content": [] }),
        };
        let writes = plan_child_ended(&s, "resize", &outcome, at(7));
        let [Write::PutStep(row), Write::PutTask(task)] = writes.as_slice() else {
            panic!("a row and the task: {writes:?}");
        };
        assert_eq!(row.status, StepStatus::Completed);
        assert_eq!(ChildOutcome::from_stored(row.result.as_deref()), outcome);
        assert_eq!(task.next_run_at, Some(at(7)));
        let mut taken = s.clone();
        taken.apply_guarded(Default::default(), &writes);
        assert!(plan_child_ended(&taken, "resize", &outcome, at(8)).is_empty());
        assert!(plan_child_ended(&s, "other", &outcome, at(8)).is_empty());
        let mut ended = s;
        ended.task.transition(TaskStatus::Cancelled, at(3));
        assert!(plan_child_ended(&ended, "resize", &outcome, at(8)).is_empty());
    }

    #[test]
    fn a_failed_or_cancelled_child_fails_the_row() {
        let row = pending("resize", StepKind::Child, at(0));
        for outcome in [
            ChildOutcome::Cancelled,
            ChildOutcome::Failed {
                error: TaskFailure::internal("boom"),
            },
        ] {
            assert_eq!(ended_row(&row, &outcome, at(1)).status, StepStatus::Failed);
        }
    }

    #[test]
    fn only_an_ended_child_with_an_unnotified_parent_has_something_to_deliver() {
        let mut task = state().task;
        assert!(undelivered(&task).is_none(), "no parent");
        task.parent = Some(ParentLink {
            task_id: "p".into(),
            key: "k".into(),
            notified: false,
            root: None,
        });
        assert!(undelivered(&task).is_none(), "still working");
        task.transition(TaskStatus::Cancelled, at(2));
        assert_eq!(
            undelivered(&task).map(|(_, o)| o),
            Some(ChildOutcome::Cancelled)
        );
        task.parent.as_mut().unwrap().notified = true;
        assert!(undelivered(&task).is_none(), "already taken");
    }
}
