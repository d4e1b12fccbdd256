//! What the code `#[mcp_task]`, `#[tool]` and `#[step]` generate calls. Not a public API: it changes
//! with the macros. Everything here has a documented equivalent for hand-written code
//! ([`TaskTool`], [`TaskContext::step`]).

use std::future::Future;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use schemars;
pub use serde_json;

pub use crate::core::Backoff;
use crate::core::RetryPolicy;
use crate::core::activation::NameUse;
use crate::rpc::{PlainTool, Preparation, TaskTool, ToolCall, ToolOutcome};
pub use crate::runtime::LocalBoxFuture;
use crate::runtime::{StepError, TaskContext, TaskDefinition, TaskError};
use crate::wire::{CallToolResult, ErrorObject, IntoCallToolResult, Json, Tool};

/// What `#[mcp_task]` read from its attribute and the fn's doc comment.
#[derive(Clone, Debug)]
pub struct TaskSpec {
    /// The tool's name.
    pub name: &'static str,
    /// Its display title.
    pub title: Option<&'static str>,
    /// Its description (the doc comment).
    pub description: Option<&'static str>,
    /// Retention: `None` leaves the default, `Some(None)` keeps tasks forever.
    pub ttl: Option<Option<Duration>>,
    /// The suggested poll interval.
    pub poll_interval: Option<Duration>,
    /// The default retry policy of the task's steps.
    pub retry: Option<RetryPolicy>,
    /// The default per-attempt timeout of the task's steps.
    pub timeout: Option<Duration>,
    /// How long the compensations may take after a cancel.
    pub cleanup_timeout: Option<Duration>,
    /// Whether clients without the Tasks extension are refused (else it runs inline for them).
    pub required: bool,
    /// Tool annotations (`readOnlyHint`, ...) and their values.
    pub annotations: &'static [(&'static str, bool)],
    /// The OAuth scopes its calls and its tasks' requests need.
    pub scopes: &'static [&'static str],
    /// What builds the schema of the result's structured content: the `T` of a `Json<T>`
    /// result whose `T` derives `JsonSchema` (see [`OutputOf`]).
    pub output_schema: Option<fn() -> Value>,
}

/// The bound a task's input type must meet, checked where the user wrote the type.
#[diagnostic::on_unimplemented(
    message = "the input type `{Self}` of a #[mcp_task] must implement JsonSchema and Deserialize",
    label = "add #[derive(serde::Deserialize, schemars::JsonSchema)] to this type",
    note = "the tool's input schema is derived from the type, and arguments are checked against it"
)]
pub trait TaskInput: schemars::JsonSchema + DeserializeOwned + 'static {}

impl<T: schemars::JsonSchema + DeserializeOwned + 'static> TaskInput for T {}

/// The bound a step's output must meet, checked where the user wrote the type.
///
/// The blanket impl is `do_not_recommend`: rustc then reports the output type the user wrote
/// (`Vec<Report>`), once, with this message, instead of serde's own message for each of
/// `Serialize` and `Deserialize` on a type nested inside it.
#[diagnostic::on_unimplemented(
    message = "step output `{Self}` must be Serialize + DeserializeOwned to be journaled",
    label = "this type is stored in the task's journal as JSON",
    note = "add #[derive(serde::Serialize, serde::Deserialize)] to each of your types in `{Self}`"
)]
pub trait StepOutput: Serialize + DeserializeOwned + 'static {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned + 'static> StepOutput for T {}

/// The task tool of a `#[mcp_task]` fn: `handler` gets the typed input; arguments that do not
/// deserialise are answered with a tool error naming the problem, and no task is created.
pub fn task_tool<T, H>(spec: TaskSpec, handler: H) -> TaskTool
where
    T: TaskInput,
    H: for<'a> Fn(&'a TaskContext, T) -> LocalBoxFuture<'a, Result<Value, TaskError>> + 'static,
{
    let name = spec.name;
    let definition = TaskDefinition::new(name, move |cx, input| {
        match serde_json::from_value::<T>(input) {
            Ok(input) => handler(cx, input),
            // The arguments were checked when the task was created; a stored input that no
            // longer fits means the input type changed under a live task.
            Err(error) => Box::pin(std::future::ready(Err(TaskError::protocol(
                crate::wire::code::INTERNAL_ERROR,
                format!("the stored input of task {name:?} no longer fits its type: {error}"),
            )))),
        }
    });
    let definition = apply_options(definition, &spec);
    let mut tool = TaskTool::with_lazy_schema(definition, input_schema::<T>)
        .prepare(move |call| Ok::<_, ErrorObject>(check_arguments::<T>(name, call)));
    if let Some(output_schema) = spec.output_schema {
        tool = tool.with_lazy_output_schema(output_schema);
    }
    if let Some(description) = spec.description {
        tool = tool.description(description);
    }
    if let Some(title) = spec.title {
        tool = tool.title(title);
    }
    if spec.required {
        tool = tool.required();
    }
    if !spec.annotations.is_empty() {
        tool = tool.annotations(annotations(spec.annotations));
    }
    tool.scopes(spec.scopes.iter().copied())
}

fn apply_options(mut definition: TaskDefinition, spec: &TaskSpec) -> TaskDefinition {
    if let Some(ttl) = spec.ttl {
        definition = definition.ttl(ttl);
    }
    if let Some(interval) = spec.poll_interval {
        definition = definition.poll_interval(interval);
    }
    if let Some(retry) = spec.retry {
        definition = definition.retry(retry);
    }
    if let Some(timeout) = spec.cleanup_timeout {
        definition = definition.cleanup_timeout(timeout);
    }
    if let Some(timeout) = spec.timeout {
        definition = definition.step_timeout(timeout);
    }
    definition
}

/// The value type `R` of a `#[mcp_task]` fn's `Result<R, E>`, asked whether its results carry
/// structured content: `(&OutputOf::<R>::NEW).output_schema()` finds the schema of `T` for a
/// `Json<T>` whose `T` derives `JsonSchema` ([`StructuredOutput`]), and `None` for any other
/// `R` ([`UnstructuredOutput`]). Method lookup tries `OutputOf<R>`'s own impl before the
/// impl for the reference, and skips an impl whose bounds `R` does not meet, so a `T` without
/// `JsonSchema` still compiles, as before, without a schema.
#[derive(Debug)]
pub struct OutputOf<R>(std::marker::PhantomData<R>);

impl<R> OutputOf<R> {
    /// The only value.
    pub const NEW: Self = OutputOf(std::marker::PhantomData);
}

/// [`OutputOf`] of a `Json<T>` with a schema.
pub trait StructuredOutput {
    /// What builds the output schema.
    fn output_schema(&self) -> Option<fn() -> Value>;
}

impl<T: Serialize + schemars::JsonSchema> StructuredOutput for OutputOf<Json<T>> {
    fn output_schema(&self) -> Option<fn() -> Value> {
        Some(input_schema::<T>)
    }
}

/// [`OutputOf`] of any other result type.
pub trait UnstructuredOutput {
    /// `None`: the results carry no structured content.
    fn output_schema(&self) -> Option<fn() -> Value>;
}

impl<R> UnstructuredOutput for &OutputOf<R> {
    fn output_schema(&self) -> Option<fn() -> Value> {
        None
    }
}

/// The JSON Schema (draft 2020-12) of `T`, as a tool's `inputSchema`.
pub fn input_schema<T: schemars::JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

/// Starts the task if the arguments deserialise into `T`; else answers with a tool error that
/// names the offending field, so that the model can correct the call.
fn check_arguments<T: DeserializeOwned>(name: &str, call: &ToolCall) -> Preparation {
    match parse_arguments::<T>(name, &call.arguments) {
        Ok(_) => Preparation::Start(call.arguments.clone()),
        Err(refusal) => Preparation::Answer(refusal),
    }
}

/// The arguments of a call of tool `name` as `T`, or the tool error naming the offending
/// field.
fn parse_arguments<T: DeserializeOwned>(
    name: &str,
    arguments: &Value,
) -> Result<T, CallToolResult> {
    serde_path_to_error::deserialize::<_, T>(arguments).map_err(|error| {
        let path = error.path().to_string();
        let reason = error.into_inner();
        CallToolResult::error(if path == "." {
            format!("invalid arguments for {name}: {reason}")
        } else {
            format!("invalid arguments for {name}: `{path}`: {reason}")
        })
    })
}

/// The error type a `#[mcp_task]` fn returns, checked where the user wrote it.
#[diagnostic::on_unimplemented(
    message = "the error type `{Self}` of a #[mcp_task] fn must convert into TaskError",
    label = "return TaskError, or an error type that implements std::error::Error",
    note = "an error the body returns completes the task with a tool error (isError: true)"
)]
pub trait IntoTaskError {
    /// The task's error.
    fn into_task_error(self) -> TaskError;
}

impl<E: Into<TaskError>> IntoTaskError for E {
    fn into_task_error(self) -> TaskError {
        self.into()
    }
}

/// A task body's `Result` as the engine takes it: the value converted into a tool result, the
/// error into a [`TaskError`] (a tool error, or a protocol failure for `TaskError::Protocol`).
pub fn into_task_result<R, E>(result: Result<R, E>) -> Result<Value, TaskError>
where
    R: IntoCallToolResult,
    E: IntoTaskError,
{
    match result {
        Ok(value) => Ok(value.into_call_tool_result().into_value()),
        Err(error) => Err(error.into_task_error()),
    }
}

/// What `#[step]` read from its attribute.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepSpec {
    /// The step's retry policy, if not the task's.
    pub retry: Option<RetryPolicy>,
    /// The per-attempt timeout, if not the task's.
    pub timeout: Option<Duration>,
}

/// A `#[step]` fn's call: journaled under `name` in the running task's journal, or, called
/// outside a running task (or inside another step's closure), simply run. The journal key is
/// claimed now, at the call, so that concurrent calls get their keys in call order.
///
/// The output `T` is journaled as `J`, which `journaled` converts it into: the macro passes a
/// fn returning `impl StepOutput + Into<T>`, whose one check (on the user's type) is the only
/// place an output that cannot be journaled is reported; this fn, seeing only the opaque
/// type, adds no second error.
pub fn run_step<'a, T, J, E, F, Fut>(
    name: &'static str,
    spec: StepSpec,
    journaled: fn(T) -> J,
    body: F,
) -> LocalBoxFuture<'a, Result<T, E>>
where
    T: 'a,
    J: StepOutput + Into<T>,
    E: IsStepError + 'a,
    F: FnOnce() -> Fut + 'a,
    Fut: Future<Output = Result<T, E>> + 'a,
{
    let claimed = crate::runtime::current_context().map(|cx| {
        let key = cx.claim(name, NameUse::Step);
        (cx, key)
    });
    Box::pin(async move {
        let Some((cx, key)) = claimed else {
            return body().await;
        };
        let mut step = cx.claimed_step(key, move || async move {
            body()
                .await
                .map(journaled)
                .map_err(IsStepError::into_step_error)
        });
        if let Some(retry) = spec.retry {
            step = step.retry(retry);
        }
        if let Some(timeout) = spec.timeout {
            step = step.timeout(timeout);
        }
        step.await
            .map(Into::into)
            .map_err(|failure| E::from_step_error(StepError::failed_for_good(failure)))
    })
}

/// A retry policy from the macro's validated options ([`RetryPolicy::DEFAULT`] where absent).
pub const fn retry_policy(
    limit: Option<u32>,
    delay: Option<Duration>,
    backoff: Option<Backoff>,
    max_delay: Option<Duration>,
    jitter: Option<bool>,
) -> RetryPolicy {
    let default = RetryPolicy::DEFAULT;
    RetryPolicy {
        limit: match limit {
            Some(limit) => limit,
            None => default.limit,
        },
        delay: match delay {
            Some(delay) => delay,
            None => default.delay,
        },
        backoff: match backoff {
            Some(backoff) => backoff,
            None => default.backoff,
        },
        max_delay: match max_delay {
            Some(max_delay) => max_delay,
            None => default.max_delay,
        },
        jitter: match jitter {
            Some(jitter) => jitter,
            None => default.jitter,
        },
    }
}

/// The error type a `#[step]` fn returns, checked where the user wrote it.
#[diagnostic::on_unimplemented(
    message = "a #[step] fn returns `Result<T, StepError>`, not `Result<T, {Self}>`",
    label = "use durable_mcp::StepError here",
    note = "inside the step any error converts into a retryable StepError with `?`; \
            StepError::non_retryable stops the retries"
)]
pub trait IsStepError: Sized {
    /// Into the step error the journal records.
    fn into_step_error(self) -> StepError;
    /// From a step error the journal recorded.
    fn from_step_error(error: StepError) -> Self;
}

impl IsStepError for StepError {
    fn into_step_error(self) -> StepError {
        self
    }

    fn from_step_error(error: StepError) -> Self {
        error
    }
}

/// What `#[tool]` read from its attribute and the fn's doc comment.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: &'static str,
    /// Its display title.
    pub title: Option<&'static str>,
    /// Its description (the doc comment).
    pub description: Option<&'static str>,
    /// Tool annotations (`readOnlyHint`, ...) and their values.
    pub annotations: &'static [(&'static str, bool)],
    /// The OAuth scopes its calls need.
    pub scopes: &'static [&'static str],
}

/// The bound a plain tool's input type must meet, checked where the user wrote the type.
#[diagnostic::on_unimplemented(
    message = "the input type `{Self}` of a #[tool] must implement JsonSchema and Deserialize",
    label = "add #[derive(serde::Deserialize, schemars::JsonSchema)] to this type",
    note = "the tool's input schema is derived from the type, and arguments are checked against it"
)]
pub trait ToolInput: schemars::JsonSchema + DeserializeOwned + 'static {}

impl<T: schemars::JsonSchema + DeserializeOwned + 'static> ToolInput for T {}

/// The input of a `#[tool]` fn that takes none: any object.
#[derive(Debug, serde::Deserialize)]
pub struct NoInput {}

impl schemars::JsonSchema for NoInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoInput".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object", "properties": {} })
    }
}

/// What a `#[tool]` fn may return (inside its `Result`, if it returns one).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool result",
    label = "return a String, a CallToolResult, Json(value) for structured content, or a ToolOutcome",
    note = "Json(value) of a T that derives serde::Serialize and schemars::JsonSchema sends the \
            value as structuredContent, and gives the tool an outputSchema derived from T"
)]
pub trait ToolOutput {
    /// The tool's `outputSchema`, for a result with structured content.
    fn output_schema() -> Option<Value> {
        None
    }

    /// The call's outcome.
    fn into_outcome(self) -> ToolOutcome;
}

impl ToolOutput for String {
    fn into_outcome(self) -> ToolOutcome {
        CallToolResult::text(self).into()
    }
}

impl ToolOutput for &'static str {
    fn into_outcome(self) -> ToolOutcome {
        CallToolResult::text(self).into()
    }
}

impl ToolOutput for CallToolResult {
    fn into_outcome(self) -> ToolOutcome {
        self.into()
    }
}

impl ToolOutput for ToolOutcome {
    fn into_outcome(self) -> ToolOutcome {
        self
    }
}

/// The bound on the `T` of a `#[tool]` fn's `Json<T>`, checked at the return type: a `T`
/// that misses a derive is named with what to add, rather than `Json<T>` or serde's and
/// schemars' own messages.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is returned in Json, so it must derive serde::Serialize and schemars::JsonSchema",
    label = "Json<T> sends `{Self}` as structuredContent and derives the tool's outputSchema from it",
    note = "add #[derive(serde::Serialize, schemars::JsonSchema)] to `{Self}`"
)]
pub trait JsonOutput: Serialize + schemars::JsonSchema {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + schemars::JsonSchema> JsonOutput for T {}

impl<T: JsonOutput> ToolOutput for Json<T> {
    fn output_schema() -> Option<Value> {
        Some(schemars::schema_for!(T).to_value())
    }

    fn into_outcome(self) -> ToolOutcome {
        self.into_call_tool_result().into()
    }
}

/// The error type a `#[tool]` fn returns, checked where the user wrote it.
#[diagnostic::on_unimplemented(
    message = "the error type `{Self}` of a #[tool] fn must implement Display",
    label = "the error's message is the tool error the model reads (isError: true)",
    note = "return an error type that implements std::fmt::Display, such as String or anyhow::Error"
)]
pub trait ToolFailure {
    /// The tool error the call answers.
    fn into_error_result(self) -> CallToolResult;
}

impl<E: std::fmt::Display> ToolFailure for E {
    fn into_error_result(self) -> CallToolResult {
        CallToolResult::error(self.to_string())
    }
}

/// A `#[tool]` fn's `Result`, its error turned into the tool error the call answers (the
/// value is converted by [`plain_tool`], so that a result type that does not fit is reported
/// once).
pub fn tool_result<R, E: ToolFailure>(result: Result<R, E>) -> Result<R, CallToolResult> {
    result.map_err(ToolFailure::into_error_result)
}

/// A `#[tool]` fn's value, when it returns no `Result`.
pub fn tool_value<R>(value: R) -> Result<R, CallToolResult> {
    Ok(value)
}

/// The plain tool of a `#[tool]` fn returning `R`: `handler` gets the call and the typed
/// input. Arguments that do not deserialise are answered with a tool error naming the field,
/// and the handler does not run.
///
/// # Panics
///
/// When the input's or the output's schema does not describe a JSON object, which the MCP
/// wire requires of both (a programming error, reported when the server is built).
pub fn plain_tool<T, R, H>(spec: ToolSpec, handler: H) -> PlainTool
where
    T: ToolInput,
    R: ToolOutput,
    H: for<'a> Fn(&'a ToolCall, T) -> LocalBoxFuture<'a, Result<R, CallToolResult>> + 'static,
{
    let name = spec.name;
    let mut tool = Tool::new(name, object_schema::<T>(name, "input", input_schema::<T>()));
    tool.title = spec.title.map(str::to_owned);
    tool.description = spec.description.map(str::to_owned);
    tool.output_schema =
        R::output_schema().map(|schema| object_schema::<R>(name, "output", schema));
    if !spec.annotations.is_empty() {
        tool.annotations = Some(annotations(spec.annotations));
    }
    let handler = std::rc::Rc::new(handler);
    let scopes = spec.scopes.iter().copied();
    PlainTool::new(tool, move |call: ToolCall| {
        let handler = std::rc::Rc::clone(&handler);
        async move {
            let input = match parse_arguments::<T>(name, &call.arguments) {
                Ok(input) => input,
                Err(refusal) => return Ok(refusal.into()),
            };
            Ok(match handler(&call, input).await {
                Ok(value) => value.into_outcome(),
                Err(error) => error.into(),
            })
        }
    })
    .scopes(scopes)
}

/// `schema`, after checking it describes an object.
fn object_schema<T>(tool: &str, what: &str, schema: Value) -> Value {
    assert!(
        schema["type"] == "object",
        "the {what} type `{}` of the tool {tool:?} is not a JSON object (its schema is {schema}); \
         MCP requires an object: use a struct with named fields",
        std::any::type_name::<T>(),
    );
    schema
}

fn annotations(hints: &[(&str, bool)]) -> Value {
    let hints = hints
        .iter()
        .map(|(hint, value)| ((*hint).to_owned(), Value::Bool(*value)))
        .collect();
    Value::Object(hints)
}
