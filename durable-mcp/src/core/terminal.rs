//! The terminal transitions of a task, wherever they are decided: the control plane's
//! (a cancel settled, a task expired), and an activation's settlement (its body returned,
//! failed or was cancelled).

use serde_json::{Value, json};

use super::error::EngineError;
use super::journal::{TaskState, Write};
use super::task::{TaskFailure, TaskRecord, TaskStatus};
use super::time::Timestamp;

/// A terminal transition made by the control plane. It also moves the lease on, so that an
/// activation still running somewhere can no longer write.
pub fn finish(
    state: &TaskState,
    now: Timestamp,
    set: impl FnOnce(&mut TaskRecord) -> TaskStatus,
) -> Write {
    let mut task = state.task.clone();
    let status = set(&mut task);
    task.transition(status, now);
    task.generation += 1;
    Write::PutTask(task)
}

/// The write that settles a requested cancellation: `cancelled`, saying so in the status
/// message if compensations were left unrun (the cleanup's deadline passed).
pub fn settle_cancel(state: &TaskState, now: Timestamp) -> Write {
    finish(state, now, |task| {
        note_unrun_cleanup(state, task);
        TaskStatus::Cancelled
    })
}

/// Says in the status message of a task being cancelled how many of its compensations were
/// never run, and how many of its children were not asked to stop (none, usually: then nothing
/// is said).
pub(crate) fn note_unrun_cleanup(state: &TaskState, task: &mut TaskRecord) {
    let unrun = state.pending_cleanup().count();
    let children = state.pending_children().count();
    let left = match (unrun, children) {
        (0, 0) => return,
        (unrun, 0) => format!("{unrun} compensation(s) not run"),
        (0, children) => format!("{children} child task(s) not cancelled"),
        (unrun, children) => {
            format!("{unrun} compensation(s) not run and {children} child task(s) not cancelled")
        }
    };
    task.status_message = Some(format!(
        "cancelled with {left}: the cleanup's deadline passed, or the body no longer reaches \
         them"
    ));
}

/// Fails the task with an engine error.
pub(crate) fn fail(task: &mut TaskRecord, error: &EngineError, now: Timestamp) {
    task.result = None;
    task.error = Some(TaskFailure::internal(error.to_string()));
    task.transition(TaskStatus::Failed, now);
}

/// The tool result of a body that failed: a text content block with `isError: true`.
pub fn tool_error_result(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}
