//! One activation: run a claimed task's body against its journal until it returns or stops.

use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::task::Poll;

use futures_util::FutureExt;
use serde_json::Value;

use std::rc::Rc;

use super::context::{ContextParts, TaskContext};
use super::current::while_current;
use super::error::TaskError;
use super::host::Host;
use super::registry::TaskDefinition;
use super::step::panic_message;
use crate::core::activation::{End, Suspension};
use crate::core::tick::BodyOutcome;
use crate::core::{EngineError, Limits, TaskFailure, TaskState, Timestamp};

/// Runs the body of a claimed task until it returns or stops at a suspension point.
pub(crate) async fn run_body(
    host: &Host,
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
