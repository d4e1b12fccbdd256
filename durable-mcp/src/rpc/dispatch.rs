//! The methods the router serves, once a request has passed the ladder.

use std::rc::Rc;

use crate::apart::apart;

use futures_util::stream::LocalBoxStream;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::error::RpcError;
use super::exchange::{Answered, Exchange, Shape};
use super::follow::{Emit, Follow, OnInput, Outcome as FollowOutcome, Refusal};
use super::headers::check_param_headers;
use super::http::Headers;
use super::inline;
use super::listeners::Listeners;
use super::notify::{LogLevel, Notifier};
use super::prompts::CompletionCall;
use super::request::{Outcome, ToolCall};
use super::server::{McpServer, Preparation, ResourceListing, TaskTool, ToolEntry};
use crate::core::TaskSnapshot;
use crate::runtime::CreateTask;
use crate::runtime::TaskRoute;
use crate::wire::envelope::{META_LOG_LEVEL, SUPPORTED_VERSIONS, TASKS_EXTENSION};
use crate::wire::params::{
    CallToolParams, CancelTaskParams, GetTaskParams, ReadResourceParams, UpdateTaskParams,
};
use crate::wire::tasks::complete_result;
use crate::wire::{
    CallToolResult, CompleteParams, Completion, CreateTaskResult, DetailedTask, GetPromptParams,
    InputRequiredResult, RequestMeta,
};

/// Every method the router serves; anything else is -32601.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Discover,
    ToolsList,
    ToolsCall,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    PromptsList,
    PromptsGet,
    CompletionComplete,
    TasksGet,
    TasksUpdate,
    TasksCancel,
    SubscriptionsListen,
}

impl Method {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "server/discover" => Method::Discover,
            "tools/list" => Method::ToolsList,
            "tools/call" => Method::ToolsCall,
            "resources/list" => Method::ResourcesList,
            "resources/templates/list" => Method::ResourceTemplatesList,
            "resources/read" => Method::ResourcesRead,
            "prompts/list" => Method::PromptsList,
            "prompts/get" => Method::PromptsGet,
            "completion/complete" => Method::CompletionComplete,
            "tasks/get" => Method::TasksGet,
            "tasks/update" => Method::TasksUpdate,
            "tasks/cancel" => Method::TasksCancel,
            "subscriptions/listen" => Method::SubscriptionsListen,
            _ => return None,
        })
    }

    /// The value the `Mcp-Name` header must carry for this method, read from the params.
    pub(crate) fn routed_name(self, params: &Map<String, Value>) -> Result<Option<&str>, RpcError> {
        let field = match self {
            Method::ToolsCall | Method::PromptsGet => "name",
            Method::ResourcesRead => "uri",
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => "taskId",
            _ => return Ok(None),
        };
        match params.get(field) {
            Some(Value::String(name)) => Ok(Some(name)),
            _ => Err(RpcError::invalid_params(format!(
                "Invalid params: \"{field}\" must be a string"
            ))),
        }
    }

    fn is_task_method(self) -> bool {
        matches!(
            self,
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel
        )
    }
}

/// One authenticated, well-formed request.
pub(crate) struct Call<'a> {
    pub(crate) server: &'a McpServer,
    /// Shared, since a followed task's stream outlives the request's handler.
    pub(crate) tasks: &'a Rc<dyn TaskRoute>,
    /// Where the tasks this request creates are listed (`tasks/list`), if anywhere.
    pub(crate) list_scope: Option<String>,
    /// The lowest level of the log messages the client wants from a tool, if any.
    pub(crate) log_level: Option<LogLevel>,
    /// Whether input a plain tool asks for is asked of the client over the call's stream
    /// (2025) rather than answered as an `InputRequiredResult` (2026-07-28).
    pub(crate) asks_client: bool,
    pub(crate) params: &'a Map<String, Value>,
    pub(crate) meta: &'a RequestMeta,
    pub(crate) principal: Option<String>,
    /// The scopes the caller's access token grants; `None` when the server checks no tokens.
    pub(crate) granted: Option<Vec<String>>,
    pub(crate) headers: &'a Headers,
    /// The host's open listen streams, which a handler's list changes reach.
    pub(crate) listeners: &'a Listeners,
}

/// How long a listing may be cached, in milliseconds: listings change only with a deploy, but
/// clients are not told when that happens.
const LIST_TTL_MS: u64 = 0;

impl Call<'_> {
    pub(crate) async fn dispatch(self, method: Method) -> Result<Reply, RpcError> {
        if method.is_task_method() && !self.declares_tasks() {
            return Err(RpcError::tasks_required("tasks/* methods"));
        }
        // Each arm apart: a request compiles only the code of its method (see `apart`).
        match method {
            Method::ToolsCall => return apart(self.call_tool()).await,
            Method::PromptsGet => return apart(self.get_prompt()).await,
            _ => {}
        }
        apart(self.answer(method)).await.map(Reply::Value)
    }

    /// Answers every method but `tools/call` and `prompts/get`, which may stream.
    pub(crate) async fn answer(&self, method: Method) -> Result<Value, RpcError> {
        match method {
            Method::Discover => Ok(self.discover()),
            Method::ToolsList => Ok(self.list_tools()),
            Method::ToolsCall => Err(RpcError::internal("tools/call is answered by dispatch")),
            Method::ResourcesList => Ok(self.list_resources(false)),
            Method::ResourceTemplatesList => Ok(self.list_resources(true)),
            Method::ResourcesRead => apart(self.read_resource()).await,
            Method::PromptsList => self.list_prompts(),
            Method::PromptsGet => Err(RpcError::internal("prompts/get is answered by dispatch")),
            Method::CompletionComplete => apart(self.complete()).await,
            Method::TasksGet => apart(self.get_task()).await,
            Method::TasksUpdate => apart(self.update_task()).await,
            Method::TasksCancel => apart(self.cancel_task()).await,
            Method::SubscriptionsListen => Err(RpcError::internal(
                "subscriptions/listen is answered by listen",
            )),
        }
    }

    fn declares_tasks(&self) -> bool {
        self.meta.client_capabilities.supports_tasks()
    }

    fn params<T: DeserializeOwned>(&self, method: &str) -> Result<T, RpcError> {
        read_params(self.params, method)
    }

    fn discover(&self) -> Value {
        // Every list may change (a handler says so through its notifier), and
        // subscriptions/listen pushes the change to whoever asked.
        let mut capabilities = json!({ "tools": { "listChanged": true } });
        if !self.server.resources.is_empty() {
            capabilities["resources"] = json!({ "listChanged": true, "subscribe": true });
        }
        if !self.server.prompts.is_empty() {
            capabilities["prompts"] = json!({ "listChanged": true });
        }
        if self.server.completion.is_some() {
            capabilities["completions"] = json!({});
        }
        if self.server.has_tasks() {
            capabilities["extensions"] = json!({ TASKS_EXTENSION: {} });
        }
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": SUPPORTED_VERSIONS,
            "capabilities": capabilities,
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
        });
        if let Some(instructions) = &self.server.instructions {
            result["instructions"] = json!(instructions);
        }
        result
    }

    fn list_tools(&self) -> Value {
        let tools: Vec<_> = self.server.tools.iter().map(ToolEntry::tool).collect();
        listing("tools", json!(tools))
    }

    fn list_resources(&self, templates: bool) -> Value {
        let listed: Vec<Value> = self
            .server
            .resources
            .iter()
            .filter_map(|entry| match (&entry.listing, templates) {
                (ResourceListing::Fixed(resource), false) => Some(json!(resource)),
                (ResourceListing::Template(template), true) => Some(json!(template)),
                _ => None,
            })
            .collect();
        let key = if templates {
            "resourceTemplates"
        } else {
            "resources"
        };
        listing(key, Value::Array(listed))
    }

    async fn read_resource(&self) -> Result<Value, RpcError> {
        let ReadResourceParams { uri } = self.params("resources/read")?;
        let Some(entry) = self
            .server
            .resources
            .iter()
            .find(|entry| entry.serves(&uri))
        else {
            let mut error = RpcError::invalid_params(format!("Resource not found: {uri}"));
            error.error.data = Some(json!({ "uri": uri }));
            return Err(error);
        };
        let contents = (entry.read)(uri).await.map_err(called)?;
        Ok(listing("contents", json!(contents)))
    }

    async fn call_tool(&self) -> Result<Reply, RpcError> {
        let (entry, call) = self.resolve_tool()?;
        match entry {
            ToolEntry::Plain(plain) => {
                let exchange = Exchange {
                    handler: Rc::clone(&plain.handler),
                    call,
                    ask_client: self.asks_client,
                    tasks: Rc::clone(self.tasks),
                };
                let shape = Shape {
                    answer,
                    undeclared: |reason| {
                        // The model reads why, and may try otherwise.
                        let result = CallToolResult::error(format!("the tool {reason}"));
                        Ok(answer(Outcome::Complete(result)))
                    },
                };
                reply(exchange.run(shape))
            }
            ToolEntry::Task(task) => apart(self.call_task_tool(task, call)).await,
        }
    }

    /// The tool a `tools/call` names and the call its handler gets, its headers checked.
    pub(crate) fn resolve_tool(&self) -> Result<(&ToolEntry, ToolCall), RpcError> {
        let params: CallToolParams = self.params("tools/call")?;
        let entry = self
            .server
            .find_tool(&params.name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {}", params.name)))?;
        self.server
            .check_scopes(self.granted.as_deref(), &params.name)?;
        let call = ToolCall {
            arguments: Value::Object(params.arguments.unwrap_or_default()),
            input_responses: params.input_responses,
            request_state: params.request_state,
            principal: self.principal.clone(),
            client_capabilities: self.meta.client_capabilities.clone(),
            notify: Notifier::listening(progress_token(self.params), self.log_level)
                .announcing_to(self.listeners),
        };
        check_param_headers(&entry.tool().input_schema, &call.arguments, self.headers)?;
        Ok((entry, call))
    }

    async fn call_task_tool(&self, task: &TaskTool, call: ToolCall) -> Result<Reply, RpcError> {
        let declared = self.declares_tasks();
        if !declared && task.required {
            return Err(RpcError::tasks_required(&format!(
                "the tool {:?}",
                task.tool.name
            )));
        }
        if !declared {
            return apart(self.run_inline(task, call)).await;
        }
        match self.start_task(task, call).await? {
            Started::Task(snapshot) => Ok(Reply::Value(json!(CreateTaskResult::of(&snapshot)))),
            Started::Answered(answer) => Ok(Reply::Value(answer)),
        }
    }

    /// A task tool's call by a client that cannot poll: the task runs (or, on a retried call,
    /// goes on with the answers the call carries) and the call waits for it, with the input it
    /// asks for answered as input rounds of the call (see `inline`), until the inline
    /// deadline. With a progress token, the wait is a stream reporting each status message.
    async fn run_inline(&self, task: &TaskTool, call: ToolCall) -> Result<Reply, RpcError> {
        let asks_input = call.client_capabilities.other.contains_key("elicitation");
        let (snapshot, answered) = match inline::resumed_task(&call) {
            Some(task_id) => {
                inline::resume(self.tasks.as_ref(), &task.tool.name, task_id, &call).await?
            }
            None => match self.start_task(task, call).await? {
                Started::Task(snapshot) => (*snapshot, Vec::new()),
                Started::Answered(answer) => return Ok(Reply::Value(answer)),
            },
        };
        let follow = Follow {
            tasks: Rc::clone(self.tasks),
            task_id: snapshot.task_id.clone(),
            principal: self.principal.clone(),
            progress_token: progress_token(self.params),
            on_input: if asks_input {
                OnInput::Return {
                    answered: answered.into_iter().collect(),
                }
            } else {
                OnInput::Refuse(Refusal::MissingTasksExtension)
            },
            outcome: FollowOutcome::Modern,
            deadline: Some(self.server.inline_deadline),
        };
        if follow.progress_token.is_some() {
            Ok(Reply::Stream(follow.into_stream(snapshot)))
        } else {
            follow.outcome(snapshot).await.map(Reply::Value)
        }
    }

    /// Creates the task of a call to `task` (after its `prepare` hook), unless the hook
    /// answered the call itself (with a 2026-07-28 result).
    pub(crate) async fn start_task(
        &self,
        task: &TaskTool,
        call: ToolCall,
    ) -> Result<Started, RpcError> {
        let preparation = match &task.prepare {
            Some(prepare) => prepare(&call).map_err(called)?,
            None => Preparation::Start(call.arguments),
        };
        let input = match preparation {
            Preparation::Start(input) => input,
            Preparation::InputRequired(input) => {
                return Ok(Started::Answered(input_required(input)));
            }
            Preparation::Answer(result) => {
                return Ok(Started::Answered(complete_result(json!(result))));
            }
        };
        let mut request = CreateTask::new(task.tool.name.clone(), input);
        request.principal = self.principal.clone();
        request.list_scope = self.list_scope.clone();
        Ok(Started::Task(Box::new(self.tasks.create(request).await?)))
    }

    /// A server without prompts does not advertise them, so it does not serve their methods.
    fn serves_prompts(&self, method: &str) -> Result<(), RpcError> {
        if self.server.prompts.is_empty() {
            return Err(RpcError::method_not_found(method));
        }
        Ok(())
    }

    fn list_prompts(&self) -> Result<Value, RpcError> {
        self.serves_prompts("prompts/list")?;
        let prompts: Vec<_> = self
            .server
            .prompts
            .iter()
            .map(|entry| &entry.prompt)
            .collect();
        Ok(listing("prompts", json!(prompts)))
    }

    async fn get_prompt(&self) -> Result<Reply, RpcError> {
        self.serves_prompts("prompts/get")?;
        let params: GetPromptParams = self.params("prompts/get")?;
        let entry = self.server.prompt_entry(&params.name)?;
        let principal = self.principal.clone();
        let call = entry.call(params, principal, self.meta.client_capabilities.clone())?;
        let exchange = Exchange {
            handler: Rc::clone(&entry.handler),
            call,
            ask_client: self.asks_client,
            tasks: Rc::clone(self.tasks),
        };
        let shape = Shape {
            answer,
            undeclared: |reason| Err(RpcError::invalid_request(format!("The prompt {reason}"))),
        };
        reply(exchange.run(shape))
    }

    async fn complete(&self) -> Result<Value, RpcError> {
        let params: CompleteParams = self.params("completion/complete")?;
        self.server.check_reference(&params.reference)?;
        let completion = match &self.server.completion {
            Some(complete) => complete(CompletionCall::new(params, self.principal.clone()))
                .await
                .map_err(called)?,
            None => Completion::default(),
        };
        Ok(json!({ "resultType": "complete", "completion": completion.truncated() }))
    }

    async fn get_task(&self) -> Result<Value, RpcError> {
        let GetTaskParams { task_id } = self.params("tasks/get")?;
        let snapshot = self.tasks.get(&task_id, self.principal.as_deref()).await?;
        self.server
            .check_scopes(self.granted.as_deref(), &snapshot.tool_name)?;
        let mut result = json!(DetailedTask::of(&snapshot));
        result["resultType"] = json!("complete");
        Ok(result)
    }

    async fn update_task(&self) -> Result<Value, RpcError> {
        let UpdateTaskParams {
            task_id,
            input_responses,
        } = self.params("tasks/update")?;
        self.check_task_scopes(&task_id).await?;
        self.tasks
            .update(&task_id, &input_responses, self.principal.as_deref())
            .await?;
        Ok(json!({ "resultType": "complete" }))
    }

    /// Refuses a change to a task whose tool needs scopes the caller lacks; the task is read
    /// first only when some tool needs scopes.
    async fn check_task_scopes(&self, task_id: &str) -> Result<(), RpcError> {
        let (principal, granted) = (self.principal.as_deref(), self.granted.as_deref());
        check_task_scopes(
            self.server,
            self.tasks.as_ref(),
            task_id,
            principal,
            granted,
        )
        .await
    }

    async fn cancel_task(&self) -> Result<Value, RpcError> {
        let CancelTaskParams { task_id } = self.params("tasks/cancel")?;
        self.check_task_scopes(&task_id).await?;
        self.tasks
            .cancel(&task_id, self.principal.as_deref())
            .await?;
        Ok(json!({ "resultType": "complete" }))
    }
}

/// What a request is answered with: a result now, or a stream of messages ending with it.
pub(crate) enum Reply {
    Value(Value),
    Stream(LocalBoxStream<'static, Emit>),
}

/// What a call of a task tool led to.
pub(crate) enum Started {
    /// The task, created.
    Task(Box<TaskSnapshot>),
    /// No task: the tool's `prepare` hook answered (a 2026-07-28 result).
    Answered(Value),
}

/// The params of a `method` request as `T`, read in place (no copy of the request's map), or
/// -32602 naming the method.
pub(crate) fn read_params<T: DeserializeOwned>(
    params: &Map<String, Value>,
    method: &str,
) -> Result<T, RpcError> {
    T::deserialize(params)
        .map_err(|error| RpcError::invalid_params(format!("Invalid params for {method}: {error}")))
}

/// The log level a 2026-07-28 request's `_meta` asks for, if any.
pub(crate) fn requested_log_level(params: &Map<String, Value>) -> Option<LogLevel> {
    let level = params.get("_meta")?.get(META_LOG_LEVEL)?;
    serde_json::from_value(level.clone()).ok()
}

/// The listing scope of the tasks an authenticated caller creates: its principal's.
pub(crate) fn principal_list_scope(principal: &str) -> String {
    format!("principal:{principal}")
}

/// The `progressToken` a request's `_meta` carries, if any.
pub(crate) fn progress_token(params: &Map<String, Value>) -> Option<Value> {
    params
        .get("_meta")?
        .get("progressToken")
        .filter(|token| token.is_string() || token.is_number())
        .cloned()
}

/// A listing result with the caching fields the 2026-07-28 revision requires.
fn listing(key: &str, items: Value) -> Value {
    json!({ "resultType": "complete", key: items, "ttlMs": LIST_TTL_MS, "cacheScope": "public" })
}

/// What a handler's request answers: JSON at once, or its stream.
fn reply<T: Serialize>(answered: Answered<T>) -> Result<Reply, RpcError> {
    match answered {
        Answered::Now(outcome) => Ok(Reply::Value(answer(outcome.map_err(called)?))),
        Answered::Streamed(emits) => Ok(Reply::Stream(emits)),
    }
}

/// A handler's answer: its result, complete, or its request for input.
pub(crate) fn answer<T: Serialize>(outcome: Outcome<T>) -> Value {
    match outcome {
        Outcome::Complete(result) => complete_result(json!(result)),
        Outcome::InputRequired(input) => input_required(input),
    }
}

pub(crate) fn input_required(input: InputRequiredResult) -> Value {
    let mut result = json!(input);
    result["resultType"] = json!("input_required");
    result
}

/// An error a user handler returned, sent as the call's JSON-RPC error: with HTTP 400 when it
/// is one of the transport-level codes the revision sends that way, else 200.
/// Refuses a change to the task `task_id` whose tool needs scopes `granted` lacks. The task is
/// read first (as `principal`) only when some tool needs scopes; `granted` is `None` when the
/// server checks no tokens.
pub(crate) async fn check_task_scopes(
    server: &McpServer,
    tasks: &dyn TaskRoute,
    task_id: &str,
    principal: Option<&str>,
    granted: Option<&[String]>,
) -> Result<(), RpcError> {
    if granted.is_none() || !server.has_scoped_tools() {
        return Ok(());
    }
    let snapshot = tasks.get(task_id, principal).await?;
    server.check_scopes(granted, &snapshot.tool_name)
}

fn called(error: crate::wire::ErrorObject) -> RpcError {
    let transport = [
        crate::wire::code::HEADER_MISMATCH,
        crate::wire::code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        crate::wire::code::UNSUPPORTED_PROTOCOL_VERSION,
    ];
    let status = if transport.contains(&error.code) {
        400
    } else {
        200
    };
    RpcError::with_status(status, error)
}
