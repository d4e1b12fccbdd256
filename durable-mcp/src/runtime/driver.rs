//! One activation: claim the task, replay its body against the journal, settle the outcome.

use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::task::Poll;

use futures_util::FutureExt;
use serde_json::{Value, json};

use std::rc::Rc;

use super::context::{ContextParts, TaskContext};
use super::current::while_current;
use super::error::TaskError;
use super::host::Host;
use super::registry::TaskDefinition;
use super::step::panic_message;
use crate::core::activation::{End, Suspension};
use crate::core::limits::to_stored_json;
use crate::core::{
    EngineError, Guard, Limits, TaskFailure, TaskRecord, TaskState, TaskStatus, Timestamp,
};

/// How a run of the body ended.
#[derive(Debug)]
pub(crate) enum RunOutcome {
    /// The body returned.
    Returned(Result<Value, TaskError>),
    /// The body panicked outside a step.
    Panicked(String),
    /// The body was stopped at a suspension point.
    Suspended(End),
}

/// Runs the body of a claimed task until it returns or stops at a suspension point.
pub(crate) async fn run_body(
    host: &Host,
    definition: &TaskDefinition,
    journal: TaskState,
    limits: Limits,
    hand_off_at: Option<Timestamp>,
) -> RunOutcome {
    let input: Value = match serde_json::from_str(&journal.task.input) {
        Ok(input) => input,
        Err(error) => {
            let error = EngineError::not_serialisable("the stored task input", &error);
            return RunOutcome::Suspended(End {
                suspension: Suspension::Fail(error),
                rerun: false,
            });
        }
    };
    let options = definition.task_options();
    let cx = Rc::new(TaskContext::new(ContextParts {
        journal,
        host: host.clone(),
        retry: options.retry,
        step_timeout: options.step_timeout,
        limits,
        hand_off_at,
    }));
    let mut body = AssertUnwindSafe((definition.handler())(&cx, input)).catch_unwind();
    poll_fn(|waker| {
        // `#[step]` fns called by the body find their task here.
        let polled = while_current(&cx, || body.poll_unpin(waker));
        // The activation ends once the body stopped and the attempts still running in other
        // branches are recorded. A stop wins even over a body that went on (say, through a
        // `select!` that dropped the stopped branch): nothing the body did after it counts.
        if let Some(end) = cx.end() {
            return Poll::Ready(RunOutcome::Suspended(end));
        }
        match polled {
            Poll::Ready(Ok(returned)) => Poll::Ready(RunOutcome::Returned(returned)),
            Poll::Ready(Err(panic)) => Poll::Ready(RunOutcome::Panicked(panic_message(&*panic))),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// The tool result of a body that failed: a text content block with `isError: true`.
pub fn tool_error_result(message: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

/// The task row after an activation of lease `claimed` ended with `outcome`, given the row as
/// it is now; `None` if nothing is to be written.
pub(crate) fn settled_record(
    current: &TaskRecord,
    claimed: &TaskRecord,
    outcome: &RunOutcome,
    limits: &Limits,
    now: Timestamp,
) -> Option<TaskRecord> {
    let mut task = current.clone();
    match outcome {
        RunOutcome::Returned(Ok(result)) => {
            match to_stored_json(limits, || "the task result".to_owned(), result) {
                Ok(json) => {
                    task.result = Some(json);
                    task.transition(TaskStatus::Completed, now);
                }
                Err(error) => fail(&mut task, &error, now),
            }
        }
        RunOutcome::Returned(Err(TaskError::Protocol { code, message })) => {
            task.result = None;
            task.error = Some(TaskFailure {
                code: *code,
                message: message.clone(),
            });
            task.transition(TaskStatus::Failed, now);
        }
        RunOutcome::Returned(Err(error)) => complete_with_error(&mut task, &error.to_string(), now),
        RunOutcome::Panicked(message) => {
            let message = format!("the task body panicked: {message}");
            complete_with_error(&mut task, &message, now);
        }
        RunOutcome::Suspended(end) => match &end.suspension {
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
                if task.next_run_at == claimed.next_run_at {
                    task.next_run_at = None;
                }
                cancel_if_requested(&mut task, now);
            }
            Suspension::Stale | Suspension::StoreUnavailable(_) => return None,
        },
    }
    Some(task)
}

fn cancel_if_requested(task: &mut TaskRecord, now: Timestamp) {
    if task.cancel_requested {
        task.transition(TaskStatus::Cancelled, now);
    }
}

fn complete_with_error(task: &mut TaskRecord, message: &str, now: Timestamp) {
    task.result = Some(tool_error_result(message).to_string());
    task.transition(TaskStatus::Completed, now);
}

fn fail(task: &mut TaskRecord, error: &EngineError, now: Timestamp) {
    task.result = None;
    task.error = Some(TaskFailure::internal(error.to_string()));
    task.transition(TaskStatus::Failed, now);
}

/// The guard of a settlement: the row must be unchanged since it was read, and still this
/// activation's.
pub(crate) fn settle_guard(current: &TaskRecord, claimed: &TaskRecord) -> Guard {
    Guard {
        version: Some(current.version),
        generation: Some(claimed.generation),
    }
}
