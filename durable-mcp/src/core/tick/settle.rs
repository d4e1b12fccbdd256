//! What an activation leaves on the task row once its body stopped.

use crate::core::journal::{Guard, TaskState};
use crate::core::limits::{Limits, to_stored_json};
use crate::core::outcome::{BodyOutcome, Suspension};
use crate::core::schedule::{RunCause, cleanup_left};
use crate::core::task::{TaskRecord, TaskStatus};
use crate::core::terminal::{fail, note_unrun_cleanup, tool_error_result};
use crate::core::time::Timestamp;

/// The task row after an activation whose claim set the redelivery anchor `anchor` ended with
/// `outcome`, given the task as it is now (its row and pending steps); `None` if nothing is to
/// be written.
pub(super) fn settled_record(
    current: &TaskState,
    anchor: Option<Timestamp>,
    outcome: &BodyOutcome,
    limits: &Limits,
    now: Timestamp,
) -> Option<TaskRecord> {
    let mut task = current.task.clone();
    // A cancellation waits while compensations are left to run. If none of them waits for a
    // retry, this activation stopped before running them (the cancel came in its last
    // write): the body runs again at once to run them.
    let cleanup = task.cancel_requested && cleanup_left(current, now);
    let cancel_now = task.cancel_requested && !cleanup;
    let start_cleanup = cleanup
        && current
            .pending_cleanup()
            .all(|row| row.next_attempt_at.is_none());
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
                // The activation ran every compensation it could.
                note_unrun_cleanup(current, &mut task);
                task.transition(TaskStatus::Cancelled, now);
            }
            // An attempt recorded a result after the body stopped, or the activation handed
            // off: run again at once, unless the body waits for input meanwhile (a concurrent
            // branch elicited), which only an answer or a cancellation ends.
            Suspension::Wait | Suspension::HandOff
                if (end.rerun || end.suspension == Suspension::HandOff)
                    && task.status == TaskStatus::Working =>
            {
                let cause = match end.suspension {
                    Suspension::HandOff => RunCause::HandOff,
                    _ => RunCause::LateResult,
                };
                task.schedule_run(now, cause);
                cancel_if(cancel_now, &mut task, now);
            }
            Suspension::Wait | Suspension::HandOff => {
                // The claim's redelivery anchor is spent; a wake asked for meanwhile stays.
                if task.next_run_at == anchor {
                    task.clear_run();
                }
                if start_cleanup {
                    task.schedule_run(now, RunCause::Cancel);
                }
                cancel_if(cancel_now, &mut task, now);
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

fn cancel_if(cancel: bool, task: &mut TaskRecord, now: Timestamp) {
    if cancel {
        task.transition(TaskStatus::Cancelled, now);
    }
}
