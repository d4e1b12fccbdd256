//! One activation: run a claimed task's body against its journal until it returns or stops.

use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use futures_util::FutureExt;
use serde_json::Value;

use super::context::{ContextParts, TaskContext};
use super::current::while_current;
use super::error::TaskError;
use super::host::Host;
use super::registry::TaskDefinition;
use super::route::TaskRoute;
use super::step::panic_message;
use crate::core::outcome::{BodyOutcome, End, Suspension};
use crate::core::{EngineError, Limits, TaskFailure, TaskState, Timestamp};

/// Runs the body of a claimed task until it returns or stops at a suspension point.
pub(crate) async fn run_body(
    host: &Host,
    tasks: Option<Rc<dyn TaskRoute>>,
    definition: &TaskDefinition,
    journal: TaskState,
    limits: Limits,
    hand_off_at: Option<Timestamp>,
) -> BodyOutcome {
    let input: Value = match serde_json::from_str(&journal.task.input) {
        Ok(input) => input,
        Err(error) => {
            let error = EngineError::not_serialisable("the stored task input", &error);
            return BodyOutcome::Stopped(End {
                suspension: Suspension::Fail(error),
                rerun: false,
            });
        }
    };
    let options = definition.task_options();
    let cx = Rc::new(TaskContext::new(ContextParts {
        journal,
        host: host.clone(),
        tasks,
        retry: options.retry,
        step_timeout: options.step_timeout,
        limits,
        hand_off_at,
    }));
    let body = AssertUnwindSafe((definition.handler())(&cx, input)).catch_unwind();
    let mut outcome = run_until_stopped(&cx, body).await;
    // A body that skipped recorded ground fails; one whose cancel was recorded first is
    // cancelled: neither completes.
    if !matches!(outcome, BodyOutcome::Stopped(_))
        && (cx.fail_unreached_journal() || cx.stop_for_recorded_cancel())
        && let Some(end) = cx.end()
    {
        outcome = BodyOutcome::Stopped(end);
    }
    match &outcome {
        BodyOutcome::Stopped(end) => match end.suspension {
            Suspension::Cancelled if cx.has_cleanup() => {
                clean_up(&cx, options.cleanup_timeout).await
            }
            Suspension::Wait if cx.fail_stranded_journal() => {
                BodyOutcome::Stopped(cx.end().unwrap_or_else(|| end.clone()))
            }
            Suspension::Wait | Suspension::HandOff => {
                // What the run recorded after its last write must outlive the activation.
                cx.flush_leftovers().await;
                BodyOutcome::Stopped(cx.end().unwrap_or_else(|| end.clone()))
            }
            _ => outcome,
        },
        _ => outcome,
    }
}

/// Polls the body until it returns or stops; the body's future is dropped when this returns,
/// so nothing of it runs after.
async fn run_until_stopped(
    cx: &Rc<TaskContext>,
    body: impl Future<Output = std::thread::Result<Result<Value, TaskError>>>,
) -> BodyOutcome {
    let mut body = pin!(body);
    poll_fn(|waker| {
        // `#[step]` fns called by the body find their task here.
        let polled = while_current(cx, || body.as_mut().poll(waker));
        if polled.is_pending() {
            cx.judge_deferred_ground();
        }
        // The activation ends once the body stopped and the attempts still running in other
        // branches are recorded. A stop wins even over a body that went on (say, through a
        // `select!` that dropped the stopped branch): nothing the body did after it counts.
        if let Some(end) = cx.end() {
            return Poll::Ready(BodyOutcome::Stopped(end));
        }
        match polled {
            Poll::Ready(Ok(returned)) => Poll::Ready(returned_outcome(returned)),
            Poll::Ready(Err(panic)) => {
                let message = format!("the task body panicked: {}", panic_message(&*panic));
                Poll::Ready(BodyOutcome::Errored(message))
            }
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Runs the compensations of a body a cancellation stopped: the task is cancelled once they
/// all ran, or the activation stops where one waits (a retry) or the machine stops it.
async fn clean_up(cx: &TaskContext, timeout: std::time::Duration) -> BodyOutcome {
    let mut cleanup = pin!(cx.clean_up(timeout));
    poll_fn(|waker| {
        let polled = cleanup.as_mut().poll(waker);
        if let Some(end) = cx.end() {
            return Poll::Ready(BodyOutcome::Stopped(end));
        }
        match polled {
            Poll::Ready(()) => Poll::Ready(BodyOutcome::Stopped(End {
                suspension: Suspension::Cancelled,
                rerun: false,
            })),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// What the body's return value does to the task: a protocol error fails it, any other error
/// completes it with a tool error.
fn returned_outcome(returned: Result<Value, TaskError>) -> BodyOutcome {
    match returned {
        Ok(result) => BodyOutcome::Returned(result),
        Err(TaskError::Protocol { code, message }) => {
            BodyOutcome::Refused(TaskFailure { code, message })
        }
        Err(error) => BodyOutcome::Errored(error.to_string()),
    }
}
