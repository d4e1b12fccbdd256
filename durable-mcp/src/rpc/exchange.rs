//! A handler's request as the client sees it (a plain tool's call, a prompt's `prompts/get`):
//! the handler's notifications as they come, then its outcome. On the 2025 lane, input the
//! handler asks for (an `InputRequiredResult`) is asked of the client as server-to-client
//! requests on the same stream, and the handler runs again with the answers, as a 2026-07-28
//! client would retry it.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::{Either, select};
use futures_util::stream::{self, LocalBoxStream};
use serde_json::{Map, Value, json};

use super::error::RpcError;
use super::follow::Emit;
use super::relay::{Awaited, CALL_REQUEST_PREFIX};
use super::request::{Handler, Outcome, Request};
use crate::runtime::TaskRoute;
use crate::runtime::{LocalBoxFuture, new_task_id};
use crate::wire::{ClientCapabilities, ErrorObject, InputRequiredResult, code};

/// The client capability a server-to-client request needs.
fn required_capability(method: &str) -> &str {
    match method {
        "sampling/createMessage" => "sampling",
        "roots/list" => "roots",
        _ => "elicitation",
    }
}

/// How long a call waits for the client to answer the requests it sent.
const ANSWER_DEADLINE: Duration = Duration::from_secs(300);

/// How many rounds of input one call may ask for.
const MAX_ROUNDS: usize = 16;

type Running<T> = LocalBoxFuture<'static, Result<Outcome<T>, ErrorObject>>;

/// How one kind of handler's outcome is answered.
pub(crate) struct Shape<T> {
    /// The result the lane answers for an outcome.
    pub(crate) answer: fn(Outcome<T>) -> Value,
    /// What the client is told when the handler needs a capability it did not declare.
    pub(crate) undeclared: fn(String) -> Result<Value, RpcError>,
}

/// One request to a handler taking arguments `A` and answering `T`.
pub(crate) struct Exchange<A, T> {
    pub(crate) handler: Handler<A, T>,
    pub(crate) call: Request<A>,
    /// Ask the client for input over the stream (2025); else input required is the answer.
    pub(crate) ask_client: bool,
    /// For the deadline on the client's answers.
    pub(crate) tasks: Rc<dyn TaskRoute>,
}

/// What a request answers: its outcome at once, or a stream.
pub(crate) enum Answered<T> {
    Now(Result<Outcome<T>, ErrorObject>),
    Streamed(LocalBoxStream<'static, Emit>),
}

struct Run<A, T> {
    exchange: Exchange<A, T>,
    shape: Shape<T>,
    running: Option<Running<T>>,
    /// The requests sent to the client, awaiting its answers.
    waiting: Option<Waiting>,
    queued: VecDeque<Emit>,
    rounds: usize,
    finished: bool,
}

struct Waiting {
    awaited: Awaited,
    keys: Vec<String>,
    request_state: Option<String>,
}

impl<A: Clone + 'static, T: 'static> Exchange<A, T> {
    /// Runs the call: answered at once when the handler finishes on its first poll without a
    /// notification (and without input to ask the client for), else streamed. `shape` makes
    /// the result the lane answers from the handler's outcome.
    pub(crate) fn run(self, shape: Shape<T>) -> Answered<T> {
        let mut running = (self.handler)(self.call.clone());
        if !self.call.notify.is_listening()
            && let Some(outcome) = (&mut running).now_or_never()
        {
            if !(self.ask_client && matches!(outcome, Ok(Outcome::InputRequired(_)))) {
                return Answered::Now(outcome);
            }
            // Finished, asking for input: the stream starts from that outcome.
            running = Box::pin(std::future::ready(outcome));
        }
        let run = Run {
            exchange: self,
            shape,
            running: Some(running),
            waiting: None,
            queued: VecDeque::new(),
            rounds: 0,
            finished: false,
        };
        Answered::Streamed(Box::pin(stream::unfold(run, |mut run| async move {
            let emit = run.next().await?;
            Some((emit, run))
        })))
    }
}

impl<A: Clone, T> Run<A, T> {
    async fn next(&mut self) -> Option<Emit> {
        loop {
            if let Some(emit) = self.queued.pop_front() {
                self.finished |= matches!(emit, Emit::Done(_));
                return Some(emit);
            }
            if self.finished {
                return None;
            }
            if let Some(waiting) = self.waiting.take() {
                if let Err(error) = self.resume(waiting).await {
                    self.queued.push_back(Emit::Done(Err(error)));
                }
                continue;
            }
            let running = self.running.as_mut()?;
            let notifier = self.exchange.call.notify.clone();
            let step = poll_fn(|cx| {
                if let Poll::Ready(outcome) = running.poll_unpin(cx) {
                    return Poll::Ready(Err(outcome));
                }
                match notifier.take(cx.waker()) {
                    Some(message) => Poll::Ready(Ok(message)),
                    None => Poll::Pending,
                }
            })
            .await;
            let outcome = match step {
                Ok(message) => {
                    self.queued.push_back(Emit::Message(message));
                    continue;
                }
                Err(outcome) => outcome,
            };
            self.running = None;
            // What the handler sent before it finished goes first.
            let waker = futures_util::task::noop_waker();
            while let Some(message) = notifier.take(&waker) {
                self.queued.push_back(Emit::Message(message));
            }
            match outcome {
                Ok(Outcome::InputRequired(input)) if self.exchange.ask_client => {
                    if let Err(error) = self.ask(input) {
                        self.queued.push_back(Emit::Done(Err(error)));
                    }
                }
                Ok(outcome) => self
                    .queued
                    .push_back(Emit::Done(Ok((self.shape.answer)(outcome)))),
                Err(error) => self
                    .queued
                    .push_back(Emit::Done(Err(RpcError::with_status(200, error)))),
            }
        }
    }

    /// Queues the input requests for the client, each with an id its answer comes back with.
    fn ask(&mut self, input: InputRequiredResult) -> Result<(), RpcError> {
        self.rounds += 1;
        match ask(self.rounds, &self.exchange.call.client_capabilities, input)? {
            Asked::Undeclared(reason) => self
                .queued
                .push_back(Emit::Done((self.shape.undeclared)(reason))),
            Asked::Requests(requests, waiting) => {
                self.queued.extend(requests.into_iter().map(Emit::Message));
                self.waiting = Some(waiting);
            }
        }
        Ok(())
    }

    /// Awaits the client's answers, then runs the handler again with them.
    async fn resume(&mut self, waiting: Waiting) -> Result<(), RpcError> {
        let answers = {
            let wait = Box::pin(waiting.awaited.answers());
            let deadline = self.exchange.tasks.pause(ANSWER_DEADLINE);
            match select(wait, deadline).await {
                Either::Left((answers, _)) => answers,
                Either::Right(_) => {
                    let error = ErrorObject::new(
                        code::INTERNAL_ERROR,
                        format!(
                            "the client did not answer the tool's requests ({}) within {} s",
                            waiting.keys.join(", "),
                            ANSWER_DEADLINE.as_secs()
                        ),
                    );
                    return Err(RpcError::with_status(200, error));
                }
            }
        };
        let mut call = self.exchange.call.clone();
        call.input_responses = Some(Map::from_iter(waiting.keys.into_iter().zip(answers)));
        call.request_state = waiting.request_state;
        self.running = Some((self.exchange.handler)(call));
        Ok(())
    }
}

/// What asking the client for input comes to.
enum Asked {
    /// The client did not declare a capability the input needs: why.
    Undeclared(String),
    /// The requests to send, and what to wait for.
    Requests(Vec<Value>, Waiting),
}

/// The input requests of round `rounds` for a client with `capabilities` (outside [`Run`], so
/// that it is compiled once rather than for every handler type).
fn ask(
    rounds: usize,
    capabilities: &ClientCapabilities,
    input: InputRequiredResult,
) -> Result<Asked, RpcError> {
    if rounds > MAX_ROUNDS || input.input_requests.is_empty() {
        return Err(RpcError::internal(format!(
            "the tool asked for input {rounds} times without finishing"
        )));
    }
    let undeclared = input.input_requests.values().find_map(|request| {
        let method = request["method"].as_str().unwrap_or_default();
        let capability = required_capability(method);
        (!capabilities.other.contains_key(capability)).then_some((method, capability))
    });
    if let Some((method, capability)) = undeclared {
        return Ok(Asked::Undeclared(format!(
            "needs the client to answer {method}, and this client did not declare the \
             {capability} capability; call it from a client that supports it"
        )));
    }
    let nonce = new_task_id().map_err(RpcError::from_engine)?;
    let mut keys = Vec::new();
    let mut ids = Vec::new();
    let mut requests = Vec::new();
    for (key, request) in input.input_requests {
        let id = format!("{CALL_REQUEST_PREFIX}{nonce}/{key}");
        let mut request = request;
        request["jsonrpc"] = json!("2.0");
        request["id"] = json!(id);
        requests.push(request);
        keys.push(key);
        ids.push(id);
    }
    let waiting = Waiting {
        awaited: Awaited::new(ids),
        keys,
        request_state: input.request_state,
    };
    Ok(Asked::Requests(requests, waiting))
}
