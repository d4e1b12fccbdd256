//! Input and status from a body: [`TaskContext::elicit`] (and its [`Elicit`] future, whose
//! `timeout` option gives [`ElicitWithin`]), [`TaskContext::offer`],
//! [`TaskContext::check_input`] and [`TaskContext::status`] (its [`Status`] future).
//!
//! Like [`Step`](crate::Step), each operation claims its journal key when it is called and
//! takes its options as builder methods on the future it returns, before it is awaited.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{ErasedSerialize, TaskContext, parse_json};
use crate::core::activation::{Activation, CheckNext, Decision, ElicitNext, NameUse};
use crate::core::{DurationError, EngineError};
use crate::runtime::IntoDelay;
use crate::runtime::error::{ElicitOutcome, TaskError};
use crate::runtime::ports::LocalBoxFuture;

impl TaskContext {
    /// Asks the client for input and waits, durably, for the answer: the task shows as
    /// `input_required` with `request` under the elicitation's key until a `tasks/update`
    /// answers it. Returns the client's response object (an elicitation result:
    /// `{"action": "accept" | "decline" | "cancel", "content": {...}}`). With
    /// [`timeout`](Elicit::timeout), it gives up after a while instead.
    ///
    /// The key is `name` plus its occurrence in the run (`name`, `name#2`, ...), claimed now,
    /// when this is called; a client answers `tasks/update` under it.
    ///
    /// `request` is what `elicitation/create` takes as params; `tasks/get` shows it as
    /// `{"method": "elicitation/create", "params": request}`. Clients show a form request: a
    /// message, and an object schema of flat fields (strings, numbers, booleans, enums) to fill
    /// in, such as
    ///
    /// ```json
    /// {
    ///     "mode": "form",
    ///     "message": "Delete a.txt?",
    ///     "requestedSchema": {
    ///         "type": "object",
    ///         "properties": { "confirm": { "type": "boolean", "title": "Delete it" } },
    ///         "required": ["confirm"]
    ///     }
    /// }
    /// ```
    ///
    /// which a client answers with `{"action": "accept", "content": {"confirm": true}}`. A URL
    /// request, `{"mode": "url", "message": ..., "url": "https://..."}`, asks the user to open a
    /// page instead. Any other request fails the task where it is asked, with an error that
    /// says how to write one.
    pub fn elicit(&self, name: &str, request: impl Serialize) -> Elicit<'_> {
        Elicit {
            asked: Some(Asked {
                cx: self,
                name: name.to_owned(),
                key: self.claim(name, NameUse::Elicitation),
                // Serialised now: a value borrowed by the caller need not outlive the call.
                request: request.to_value(),
            }),
            running: None,
        }
    }

    /// Offers a standing, non-blocking input request: the task keeps running, a client may
    /// answer it at any time with `tasks/update` under the offer's key, and the answer cuts
    /// the next sleep short (once). Read the answer with [`check_input`](Self::check_input).
    /// `request` is written as for [`elicit`](Self::elicit).
    ///
    /// The key is `name` plus its occurrence in the run (`name`, then `name#2`, ...), claimed
    /// when this is called, like every other operation's; the future returns it, for
    /// `check_input`. An offer recorded by an earlier run keeps its first request.
    pub fn offer<'a>(
        &'a self,
        name: &str,
        request: impl Serialize,
    ) -> LocalBoxFuture<'a, Result<String, TaskError>> {
        let key = self.claim(name, NameUse::Offer);
        let request = request.to_value();
        Box::pin(async move {
            let key = self.proceed(key).await;
            self.new_ground(&key).await;
            self.act(|m, now| m.offer(&key, request, now)).await;
            Ok(key)
        })
    }

    /// A journaled, non-blocking read of the offer under the key `offer` (what
    /// [`offer`](Self::offer) returned): the answer if one arrived and was not taken yet
    /// (taking it), `None` otherwise. The read is keyed by `name` plus its occurrence, and
    /// replays return what it saw.
    pub fn check_input<'a>(
        &'a self,
        name: &str,
        offer: &str,
    ) -> LocalBoxFuture<'a, Result<Option<Value>, TaskError>> {
        let step_key = self.claim(name, NameUse::InputCheck);
        let offer = offer.to_owned();
        Box::pin(async move {
            let step_key = self.proceed(step_key).await;
            self.new_ground(&step_key).await;
            let answer = match self.act(|m, _| m.check(&step_key)).await {
                CheckNext::Seen(answer) => answer,
                CheckNext::Read => {
                    let stored = match self.host.store.load_input(&self.task_id, &offer) {
                        Ok(stored) => stored,
                        Err(error) => return self.store_failed(error).await,
                    };
                    self.act(|m, now| m.record_check(&step_key, &offer, stored, now))
                        .await
                }
            };
            Ok(answer.as_deref().map(parse_json))
        })
    }

    /// Publishes a status message for pollers (`statusMessage` of `tasks/get`); with
    /// [`meta`](Status::meta), a JSON object beside it. Calls that an earlier run of the body
    /// already published are not published again while replaying.
    pub fn status(&self, message: impl Into<String>) -> Status<'_> {
        Status {
            told: Some(Told {
                cx: self,
                ordinal: self.with(Activation::status_call),
                message: message.into(),
                meta: None,
            }),
            running: None,
        }
    }
}

/// What an elicitation asks, ready to be awaited.
struct Asked<'a> {
    cx: &'a TaskContext,
    name: String,
    key: Decision<String>,
    request: Result<Value, serde_json::Error>,
}

impl<'a> Asked<'a> {
    /// Waits for the answer, or for `timeout` to run out.
    async fn answer(self, timeout: Option<Result<Duration, DurationError>>) -> ElicitOutcome {
        let cx = self.cx;
        let timeout = match timeout.transpose() {
            Ok(timeout) => timeout,
            Err(source) => {
                let what = format!("the timeout of elicitation {:?}", self.name);
                let stop = cx.with(|m| m.fail(EngineError::InvalidDuration { what, source }));
                return cx.stopped(stop).await;
            }
        };
        let key = cx.proceed(self.key).await;
        cx.new_ground(&key).await;
        let request = self.request;
        match cx.act(|m, now| m.elicit(&key, request, timeout, now)).await {
            ElicitNext::Answered(response) => ElicitOutcome::Answered(parse_json(&response)),
            ElicitNext::TimedOut => ElicitOutcome::TimedOut,
        }
    }
}

/// An elicitation about to be asked ([`TaskContext::elicit`]); set options, then `.await` it
/// for the client's response object.
#[must_use = "an elicitation asks nothing until it is awaited"]
pub struct Elicit<'a> {
    asked: Option<Asked<'a>>,
    running: Option<LocalBoxFuture<'a, Result<Value, TaskError>>>,
}

impl<'a> Elicit<'a> {
    /// Gives up after `timeout` (counted from the first time the request was recorded): the
    /// elicitation then ends [`ElicitOutcome::TimedOut`], and a later answer is ignored.
    /// `timeout` is a duration as for [`sleep`](TaskContext::sleep): `duration!("1h")`.
    ///
    /// A key keeps what it was recorded with: an elicitation whose timeout ran out fails the
    /// task if a later run asks it without one.
    pub fn timeout(mut self, timeout: impl IntoDelay) -> ElicitWithin<'a> {
        ElicitWithin {
            asked: self.asked.take(),
            timeout: Some(timeout.into_delay()),
            running: None,
        }
    }
}

impl std::fmt::Debug for Elicit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = self.asked.as_ref().map(|asked| &asked.key);
        f.debug_struct("Elicit")
            .field("key", &key)
            .finish_non_exhaustive()
    }
}

impl<'a> Future for Elicit<'a> {
    type Output = Result<Value, TaskError>;

    fn poll(self: Pin<&mut Self>, waker: &mut Context<'_>) -> Poll<Self::Output> {
        let elicit = self.get_mut();
        if let Some(asked) = elicit.asked.take() {
            let name = asked.name.clone();
            elicit.running = Some(Box::pin(async move {
                match asked.answer(None).await {
                    ElicitOutcome::Answered(response) => Ok(response),
                    ElicitOutcome::TimedOut => {
                        unreachable!(
                            "elicitation {name:?} was asked without a timeout but timed out"
                        )
                    }
                }
            }));
        }
        poll_running(&mut elicit.running, waker)
    }
}

/// An elicitation with a timeout ([`Elicit::timeout`]); `.await` it for
/// [`ElicitOutcome::Answered`] or [`ElicitOutcome::TimedOut`].
#[must_use = "an elicitation asks nothing until it is awaited"]
pub struct ElicitWithin<'a> {
    asked: Option<Asked<'a>>,
    timeout: Option<Result<Duration, DurationError>>,
    running: Option<LocalBoxFuture<'a, Result<ElicitOutcome, TaskError>>>,
}

impl std::fmt::Debug for ElicitWithin<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = self.asked.as_ref().map(|asked| &asked.key);
        f.debug_struct("ElicitWithin")
            .field("key", &key)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<'a> Future for ElicitWithin<'a> {
    type Output = Result<ElicitOutcome, TaskError>;

    fn poll(self: Pin<&mut Self>, waker: &mut Context<'_>) -> Poll<Self::Output> {
        let within = self.get_mut();
        if let Some(asked) = within.asked.take() {
            let timeout = within.timeout.take();
            within.running = Some(Box::pin(async move { Ok(asked.answer(timeout).await) }));
        }
        poll_running(&mut within.running, waker)
    }
}

/// What a status call publishes, ready to be awaited.
struct Told<'a> {
    cx: &'a TaskContext,
    ordinal: Decision<u32>,
    message: String,
    meta: Option<Result<Value, serde_json::Error>>,
}

/// A status message about to be published ([`TaskContext::status`]); set options, then
/// `.await` it.
#[must_use = "a status message is published only when awaited"]
pub struct Status<'a> {
    told: Option<Told<'a>>,
    running: Option<LocalBoxFuture<'a, Result<(), TaskError>>>,
}

impl Status<'_> {
    /// Publishes `meta` with the message: a JSON object (at most 8 KiB) which replaces the
    /// previous one; a later status without it keeps it. Pollers find the object in
    /// `tasks/get` under `_meta["io.durable-mcp-server/status"]`.
    pub fn meta(mut self, meta: impl Serialize) -> Self {
        if let Some(told) = &mut self.told {
            told.meta = Some(meta.to_value());
        }
        self
    }
}

impl std::fmt::Debug for Status<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = self.told.as_ref().map(|told| &told.message);
        f.debug_struct("Status")
            .field("message", &message)
            .finish_non_exhaustive()
    }
}

impl<'a> Future for Status<'a> {
    type Output = Result<(), TaskError>;

    fn poll(self: Pin<&mut Self>, waker: &mut Context<'_>) -> Poll<Self::Output> {
        let status = self.get_mut();
        if let Some(told) = status.told.take() {
            status.running = Some(Box::pin(async move {
                let cx = told.cx;
                let ordinal = cx.proceed(told.ordinal).await;
                cx.act(|m, now| m.publish(ordinal, told.message, told.meta, now))
                    .await;
                Ok(())
            }));
        }
        poll_running(&mut status.running, waker)
    }
}

/// Polls the future an operation started on its first poll; pending for ever once it has
/// finished (a future is not polled again after it is ready).
fn poll_running<T>(
    running: &mut Option<LocalBoxFuture<'_, T>>,
    waker: &mut Context<'_>,
) -> Poll<T> {
    match running.as_mut() {
        Some(running) => running.as_mut().poll(waker),
        None => Poll::Pending,
    }
}
