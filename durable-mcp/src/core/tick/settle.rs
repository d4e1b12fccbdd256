//! What an activation leaves on the task row once its body stopped.

use serde_json::{Value, json};

use crate::core::activation::{End, Suspension};
use crate::core::error::EngineError;
use crate::core::journal::Guard;
use crate::core::limits::{Limits, to_stored_json};
use crate::core::task::{TaskFailure, TaskRecord, TaskStatus};
use crate::core::time::Timestamp;

/// How a run of the body ended, as far as the task's status goes.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyOutcome {
    /// The body returned this result.
    Returned(Value),
    /// The body failed with a JSON-RPC error: the task fails with it.
    Refused(TaskFailure),
    /// The body returned an error or panicked: the task completes with a tool error carrying
    /// this message.
    Errored(String),
    /// The body stopped at a suspension point.
    Stopped(End),
}

/// The tool result of a body that failed: a text content block with `isError: true`.
pub fn tool_error_result(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

/// The task row after an activation whose claim set the redelivery anchor `anchor` ended with
/// `outcome`, given the row as it is now; `None` if nothing is to be written.
pub(super) fn settled_record(
    current: &TaskRecord,
    anchor: Option<Timestamp>,
    outcome: &BodyOutcome,
    limits: &Limits,
    now: Timestamp,
) -> Option<TaskRecord> {
    let mut task = current.clone();
    match outcome {
        BodyOutcome::Returned(result) => {
            match to_stored_json(limits, || "the task result".to_owned(), result) {
                Ok(json) => {
                    task.result = Some(json);
                    task.transition(TaskStatus::Completed, now);
                }
                Err(error) => fail(&mut task, &error, now),
            }
        }
        BodyOutcome::Refused(failure) => {
            task.result = None;
            task.error = Some(failure.clone());
            task.transition(TaskStatus::Failed, now);
        }
        BodyOutcome::Errored(message) => {
            task.result = Some(tool_error_result(message).to_string());
            task.transition(TaskStatus::Completed, now);
        }
        BodyOutcome::Stopped(end) => match &end.suspension {
            Suspension::Fail(error) => fail(&mut task, error, now),
            Suspension::Cancelled => {
                task.transition(TaskStatus::Cancelled, now);
            }
            // An attempt recorded a result after the body stopped, or the activation handed
            // off: run again at once, unless the body waits for input meanwhile (a concurrent
            // branch elicited), which only an answer or a cancellation ends.
            Suspension::Wait | Suspension::HandOff
                if (end.rerun || end.suspension == Suspension::HandOff)
                    && task.status == TaskStatus::Working =>
            {
                task.next_run_at = Some(now);
                cancel_if_requested(&mut task, now);
            }
            Suspension::Wait | Suspension::HandOff => {
                // The claim's redelivery anchor is spent; a wake asked for meanwhile stays.
                if task.next_run_at == anchor {
                    task.next_run_at = None;
                }
                cancel_if_requested(&mut task, now);
            }
            Suspension::Stale | Suspension::StoreUnavailable(_) => return None,
        },
    }
    Some(task)
}

/// The guard of a settlement: the row must be unchanged since it was read, and still the
/// activation's whose lease is `generation`.
pub(super) fn settle_guard(current: &TaskRecord, generation: u64) -> Guard {
    Guard {
        version: Some(current.version),
        generation: Some(generation),
    }
}

fn cancel_if_requested(task: &mut TaskRecord, now: Timestamp) {
    if task.cancel_requested {
        task.transition(TaskStatus::Cancelled, now);
    }
}

fn fail(task: &mut TaskRecord, error: &EngineError, now: Timestamp) {
    task.result = None;
    task.error = Some(TaskFailure::internal(error.to_string()));
    task.transition(TaskStatus::Failed, now);
}
