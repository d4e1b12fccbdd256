//! What a handler of a tool or a prompt is asked, and what it answers: the same shapes for
//! both, since either may ask the client for input first (multi round-trip) and then answer.

use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::notify::Notifier;
use crate::runtime::LocalBoxFuture;
use crate::wire::{
    CallToolResult, ClientCapabilities, ErrorObject, GetPromptResult, InputRequiredResult,
};

/// One request a handler answers, with arguments of type `A`: a [`ToolCall`] or a
/// [`PromptCall`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request<A> {
    /// The arguments: a JSON object for a tool (`{}` when the client sent none), a map of
    /// strings for a prompt (empty when the client sent none).
    pub arguments: A,
    /// Answers to an earlier [`InputRequiredResult`], by key.
    pub input_responses: Option<Map<String, Value>>,
    /// The state an earlier [`InputRequiredResult`] asked the client to echo. The client holds
    /// it, so it is not to be trusted for authorisation.
    pub request_state: Option<String>,
    /// Who is calling, as the authentication hook said.
    pub principal: Option<String>,
    /// What the client declared it supports in this request (a handler must not use a
    /// capability the client did not declare: refuse with -32021, or ask differently).
    pub client_capabilities: ClientCapabilities,
    /// Sends the client log messages and progress while the handler works (tools only; a
    /// prompt's notifier sends nothing).
    pub notify: Notifier,
}

impl<A> Request<A> {
    /// The answer to input request `key`, if the client sent one.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input_responses.as_ref()?.get(key)
    }
}

/// One call of a tool, as its handler sees it.
pub type ToolCall = Request<Value>;

/// One `prompts/get` of a prompt, as its handler sees it: the arguments are strings.
pub type PromptCall = Request<BTreeMap<String, String>>;

/// What a handler answers: its result `T`, or a request for input first.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome<T> {
    /// The result, at once.
    Complete(T),
    /// Input the request needs first; the client retries with answers.
    InputRequired(InputRequiredResult),
}

/// What a plain tool answers.
pub type ToolOutcome = Outcome<CallToolResult>;

/// What a prompt answers.
pub type PromptOutcome = Outcome<GetPromptResult>;

impl From<CallToolResult> for ToolOutcome {
    fn from(result: CallToolResult) -> Self {
        Outcome::Complete(result)
    }
}

impl From<GetPromptResult> for PromptOutcome {
    fn from(result: GetPromptResult) -> Self {
        Outcome::Complete(result)
    }
}

impl<T> From<InputRequiredResult> for Outcome<T> {
    fn from(input: InputRequiredResult) -> Self {
        Outcome::InputRequired(input)
    }
}

/// A registered handler: a request with arguments `A` in, an outcome with result `T` out.
pub(crate) type Handler<A, T> =
    Rc<dyn Fn(Request<A>) -> LocalBoxFuture<'static, Result<Outcome<T>, ErrorObject>>>;

/// `handler` as the router stores it.
pub(crate) fn boxed<A, T, F, Fut>(handler: F) -> Handler<A, T>
where
    F: Fn(Request<A>) -> Fut + 'static,
    Fut: Future<Output = Result<Outcome<T>, ErrorObject>> + 'static,
{
    Rc::new(move |request| Box::pin(handler(request)))
}
