//! One attempt of a step closure, and how a step's value and failure are stored.

use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::{Either, select};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::StepError;
use super::ports::Timer;
use crate::core::limits::to_stored_json;
use crate::core::{EngineError, Limits, format_duration};

/// Runs one attempt of a step closure: a panic is a failed attempt, and so is outlasting
/// `timeout`. The timer is only started if the closure does not finish on its first poll.
pub(crate) async fn attempt<T>(
    timer: &dyn Timer,
    closure: impl Future<Output = Result<T, StepError>>,
    timeout: Duration,
) -> Result<T, StepError> {
    let mut closure = pin!(AssertUnwindSafe(closure).catch_unwind());
    let first = poll_fn(|cx| Poll::Ready(closure.as_mut().poll(cx))).await;
    let finished = match first {
        Poll::Ready(finished) => finished,
        Poll::Pending => match select(closure, timer.delay(timeout)).await {
            Either::Left((finished, _)) => finished,
            Either::Right(((), _)) => {
                return Err(StepError::timed_out(format!(
                    "the attempt timed out after {}",
                    format_duration(timeout)
                )));
            }
        },
    };
    finished.unwrap_or_else(|panic| {
        Err(StepError::retryable(format!(
            "the step panicked: {}",
            panic_message(&*panic)
        )))
    })
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

/// Serialises a step's value, checks its size, and checks that it reads back as `T`, so that
/// a value that would break the replay fails now, naming the step.
pub(crate) fn store_value<T: Serialize + DeserializeOwned>(
    limits: &Limits,
    key: &str,
    value: &T,
) -> Result<String, EngineError> {
    let what = || format!("the result of step {key:?}");
    let json = to_stored_json(limits, what, value)?;
    if let Err(error) = serde_json::from_str::<T>(&json) {
        return Err(EngineError::not_serialisable(what(), &error));
    }
    Ok(json)
}

/// Yields once to the executor, so that a body running many quick steps lets other work in.
pub(crate) async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}
