//! The server a user describes: its identity, tools, task tools, resources, prompts, and
//! hooks.

use std::cell::OnceCell;
use std::fmt;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use serde_json::Value;

use super::cors::CorsPolicy;
use super::http::Headers;
use super::prompts::{CompletionCall, CompletionHandler, PromptEntry};
use super::request::{Handler, PromptCall, PromptOutcome, ToolCall, ToolOutcome, boxed};
#[cfg(feature = "oauth")]
use crate::auth::OAuth;
use crate::runtime::{ChildTool, LocalBoxFuture, TaskDefinition, TaskRegistry};
use crate::wire::{
    CallToolResult, Completion, ErrorObject, Implementation, InputRequiredResult, Prompt, Resource,
    ResourceContents, ResourceTemplate, Tool,
};

/// What a task tool decides before any task exists.
#[derive(Clone, Debug, PartialEq)]
pub enum Preparation {
    /// Start the task with this input.
    Start(Value),
    /// Ask the client for input first (multi round-trip); the task starts on a later call.
    InputRequired(InputRequiredResult),
    /// Answer the call at once without a task (arguments the tool refuses, as a tool error the
    /// model can read and correct).
    Answer(CallToolResult),
}

type ToolHandler = Handler<Value, CallToolResult>;
type PrepareHook = Rc<dyn Fn(&ToolCall) -> Result<Preparation, ErrorObject>>;
type ResourceReader =
    Rc<dyn Fn(String) -> LocalBoxFuture<'static, Result<Vec<ResourceContents>, ErrorObject>>>;
type Authenticator = Rc<dyn Fn(&Headers) -> Result<Option<String>, String>>;
type ErrorHook = Rc<dyn Fn(&str, &ErrorObject)>;

/// A tool whose calls become durable tasks.
#[derive(Clone)]
pub struct TaskTool {
    /// The tool, its input schema `null` while [`input_schema`](Self::input_schema) is set.
    pub(crate) tool: Tool,
    /// What builds the input schema, the first time the tool is described: see
    /// [`described`](Self::described).
    pub(crate) input_schema: Option<fn() -> Value>,
    /// What builds the output schema (of a `#[mcp_task]` returning `Json<T>`), likewise.
    pub(crate) output_schema: Option<fn() -> Value>,
    pub(crate) described: OnceCell<Box<Tool>>,
    pub(crate) definition: TaskDefinition,
    pub(crate) required: bool,
    pub(crate) prepare: Option<PrepareHook>,
    pub(crate) scopes: Vec<String>,
}

impl fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskTool")
            .field("tool", self.described())
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

impl TaskTool {
    /// The tool that runs `definition` as a task, with arguments matching `input_schema`.
    ///
    /// Every client can call it: see [`optional`](Self::optional), the default, and
    /// [`required`](Self::required).
    pub fn new(definition: TaskDefinition, input_schema: Value) -> Self {
        TaskTool {
            tool: Tool::new(definition.name(), input_schema),
            input_schema: None,
            output_schema: None,
            described: OnceCell::new(),
            definition,
            required: false,
            prepare: None,
            scopes: Vec::new(),
        }
    }

    /// [`new`](Self::new), with the input schema built by `input_schema` the first time the
    /// tool is described (`tools/list`) or called (its header check), not when the server is
    /// built: `#[mcp_task]`'s way. A server is built by the first request of each isolate (a
    /// Worker's, and again in each task's object, which never describes a tool), and building
    /// every tool's schema there, and compiling the code that builds them, would weigh on that
    /// request.
    pub(crate) fn with_lazy_schema(
        definition: TaskDefinition,
        input_schema: fn() -> Value,
    ) -> Self {
        let mut tool = TaskTool::new(definition, Value::Null);
        tool.input_schema = Some(input_schema);
        tool
    }

    /// The same tool, whose result's `structuredContent` is described by the schema `schema`
    /// builds (an object's, as MCP requires of an `outputSchema`; another is left out), built
    /// when the tool is first described, like the input schema.
    pub(crate) fn with_lazy_output_schema(mut self, schema: fn() -> Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The tool as `tools/list` describes it, its lazy schemas built on first use.
    pub(crate) fn described(&self) -> &Tool {
        if self.input_schema.is_none() && self.output_schema.is_none() {
            return &self.tool;
        }
        self.described.get_or_init(|| {
            let mut tool = self.tool.clone();
            if let Some(input_schema) = self.input_schema {
                tool.input_schema = input_schema();
            }
            if let Some(output_schema) = self.output_schema {
                tool.output_schema =
                    Some(output_schema()).filter(|schema| schema["type"] == "object");
            }
            Box::new(tool)
        })
    }

    /// Requires `scopes` of the access token of every call of the tool and of every `tasks/*`
    /// request about its tasks, when the server checks tokens
    /// ([`McpServer::oauth`]): a token without them is answered 403 `insufficient_scope`,
    /// naming them, and the client may ask its user for them (step-up). Listed in the
    /// server's Protected Resource Metadata. Without the `oauth` feature no token is checked,
    /// so scopes limit nobody.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Sets the description the model reads.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.tool = self.tool.description(description);
        self
    }

    /// Sets the display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool = self.tool.title(title);
        self
    }

    /// Sets the tool annotations (`{"readOnlyHint": true, ...}`).
    #[must_use]
    pub fn annotations(mut self, annotations: Value) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// Lets a client that did not declare the Tasks extension call the tool (the default): the
    /// task is created and stored as for any client, and the call waits for it and answers
    /// with its result. Input the task asks for is asked as input rounds of the call
    /// (`InputRequiredResult`, whose `requestState` names the task), so the task goes on
    /// durably between rounds. A task still running at the
    /// [inline deadline](McpServer::inline_deadline) goes on, and the call answers -32021 with
    /// the task's id.
    ///
    /// This is the default because the client in front of a user is often one that speaks
    /// the core protocol only, and a tool it cannot call at all is worse than one it waits for.
    #[must_use]
    pub fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    /// Refuses the tool to a client that did not declare the Tasks extension, with -32021
    /// naming it: for a task that usually outlives the inline deadline, or whose result is
    /// of no use to a client that cannot follow it after the call answers.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Runs `prepare` on every call before a task is created: it may refuse the arguments
    /// (an `Err`, sent as the call's error and creating nothing), ask the client for input
    /// first, or choose the task's input. Without it, the arguments are the input.
    #[must_use]
    pub fn prepare(
        mut self,
        prepare: impl Fn(&ToolCall) -> Result<Preparation, ErrorObject> + 'static,
    ) -> Self {
        self.prepare = Some(Rc::new(prepare));
        self
    }
}

impl From<&McpServer> for TaskRegistry {
    /// The server's task definitions ([`McpServer::task_registry`]).
    fn from(server: &McpServer) -> Self {
        server.task_registry()
    }
}

/// What [`McpServer::task`] takes: a [`TaskTool`], or the fn `#[mcp_task]` generates.
pub trait IntoTaskTool {
    /// The task tool.
    fn into_task_tool(self) -> TaskTool;
}

impl IntoTaskTool for TaskTool {
    fn into_task_tool(self) -> TaskTool {
        self
    }
}

impl<F: FnOnce() -> TaskTool> IntoTaskTool for F {
    fn into_task_tool(self) -> TaskTool {
        self()
    }
}

/// The fn of an `#[mcp_task]` names the child task it starts
/// ([`TaskContext::start_child`](crate::TaskContext::start_child)).
impl<F: FnOnce() -> TaskTool> ChildTool for F {
    fn tool_name(self) -> String {
        self().definition.name().to_owned()
    }
}

/// A tool that answers at once: what [`McpServer::tool`] takes, written by `#[tool]` or by
/// hand with [`PlainTool::new`].
#[derive(Clone)]
pub struct PlainTool {
    pub(crate) tool: Tool,
    pub(crate) handler: ToolHandler,
    pub(crate) scopes: Vec<String>,
}

impl fmt::Debug for PlainTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainTool")
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl PlainTool {
    /// The tool `tool` (its name, input schema and descriptions), whose calls `handler`
    /// answers. The handler gets the arguments as sent: checking them is its job.
    ///
    /// ```
    /// use durable_mcp::{McpServer, PlainTool, ToolCall};
    /// use durable_mcp::wire::{CallToolResult, Tool};
    /// use serde_json::json;
    ///
    /// let echo = PlainTool::new(
    ///     Tool::new("echo", json!({ "type": "object" })).description("Echoes its arguments."),
    ///     |call: ToolCall| async move { Ok(CallToolResult::text(call.arguments.to_string()).into()) },
    /// );
    /// assert_eq!(McpServer::new("echo", "1.0.0").tool(echo).tool_names(), ["echo"]);
    /// ```
    pub fn new<F, Fut>(tool: Tool, handler: F) -> Self
    where
        F: Fn(ToolCall) -> Fut + 'static,
        Fut: Future<Output = Result<ToolOutcome, ErrorObject>> + 'static,
    {
        PlainTool {
            tool,
            handler: boxed(handler),
            scopes: Vec::new(),
        }
    }

    /// Requires `scopes` of the access token of every call of the tool, as
    /// [`TaskTool::scopes`] does.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The tool as `tools/list` describes it.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }
}

/// What [`McpServer::tool`] takes: a [`PlainTool`], or the fn `#[tool]` generates.
pub trait IntoPlainTool {
    /// The tool.
    fn into_plain_tool(self) -> PlainTool;
}

impl IntoPlainTool for PlainTool {
    fn into_plain_tool(self) -> PlainTool {
        self
    }
}

impl<F: FnOnce() -> PlainTool> IntoPlainTool for F {
    fn into_plain_tool(self) -> PlainTool {
        self()
    }
}

/// The two kinds of tool, in registration order.
#[derive(Clone)]
pub(crate) enum ToolEntry {
    Plain(PlainTool),
    Task(TaskTool),
}

impl ToolEntry {
    /// The tool as `tools/list` describes it (a task tool's input schema is built on first
    /// use: see [`TaskTool::described`]).
    pub(crate) fn tool(&self) -> &Tool {
        match self {
            ToolEntry::Plain(plain) => &plain.tool,
            ToolEntry::Task(task) => task.described(),
        }
    }

    /// The tool's name, without building its description.
    pub(crate) fn name(&self) -> &str {
        match self {
            ToolEntry::Plain(plain) => &plain.tool.name,
            ToolEntry::Task(task) => &task.tool.name,
        }
    }

    /// The scopes a token needs to call the tool.
    #[cfg(feature = "oauth")]
    pub(crate) fn scopes(&self) -> &[String] {
        match self {
            ToolEntry::Plain(plain) => &plain.scopes,
            ToolEntry::Task(task) => &task.scopes,
        }
    }
}

/// A readable resource or resource family.
#[derive(Clone)]
pub(crate) struct ResourceEntry {
    pub(crate) listing: ResourceListing,
    pub(crate) read: ResourceReader,
}

#[derive(Clone)]
pub(crate) enum ResourceListing {
    Fixed(Resource),
    Template(ResourceTemplate),
}

impl ResourceEntry {
    /// Whether this entry serves `uri`: a fixed resource by equality, a template by the literal
    /// text before its first `{`.
    pub(crate) fn serves(&self, uri: &str) -> bool {
        match &self.listing {
            ResourceListing::Fixed(resource) => resource.uri == uri,
            ResourceListing::Template(template) => {
                let prefix = template.uri_template.split('{').next().unwrap_or_default();
                uri.starts_with(prefix) && uri.len() > prefix.len()
            }
        }
    }
}

/// Which `Host` and `Origin` headers requests may carry (DNS-rebinding protection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginPolicy {
    /// Host names (without port) accepted in `Host` and in `Origin`; loopback by default.
    pub hosts: Vec<String>,
    /// Domains any subdomain of which is accepted in `Host`, and in `Origin` only as the
    /// request's own host: names a platform routes only to its own servers (see
    /// [`McpServer::allow_hosts_under`]).
    pub domains: Vec<String>,
    /// Accept any `Host` and `Origin` (behind a proxy that checks them).
    pub any: bool,
}

impl Default for OriginPolicy {
    fn default() -> Self {
        OriginPolicy {
            hosts: ["127.0.0.1", "localhost", "[::1]"]
                .map(str::to_owned)
                .to_vec(),
            domains: Vec::new(),
            any: false,
        }
    }
}

/// How long an optional task tool's call waits inline unless
/// [`McpServer::inline_deadline`] says otherwise: 5 minutes.
pub const DEFAULT_INLINE_DEADLINE: Duration = Duration::from_secs(300);

/// An MCP server: what it is called, what it serves, and its hooks. Hosts turn it into a
/// [`Router`](super::Router) with an engine.
///
/// Tools and tasks are usually `#[tool]` and `#[mcp_task]` fns, registered by name; both have
/// a hand-written form ([`PlainTool::new`], [`TaskTool::new`]):
///
/// ```
/// use durable_mcp::{McpServer, PlainTool, TaskTool, ToolCall};
/// use durable_mcp::wire::{CallToolResult, Tool};
/// use durable_mcp::{TaskContext, TaskDefinition, TaskError, duration};
/// use serde_json::{json, Value};
///
/// async fn count(cx: &TaskContext, input: Value) -> Result<Value, TaskError> {
///     cx.sleep("pause", duration!("1s")).await?;
///     Ok(CallToolResult::text(format!("counted to {}", input["to"])).into_value())
/// }
///
/// let echo = Tool::new("echo", json!({ "type": "object" }));
/// let server = McpServer::new("counter", "1.0.0")
///     .instructions("Counts slowly.")
///     .task(TaskTool::new(
///         TaskDefinition::new("count", |cx, input| Box::pin(count(cx, input))),
///         json!({ "type": "object", "properties": { "to": { "type": "integer" } } }),
///     ))
///     .tool(PlainTool::new(echo, |call: ToolCall| async move {
///         Ok(CallToolResult::text(call.arguments.to_string()).into())
///     }));
/// assert_eq!(server.tool_names(), ["count", "echo"]);
/// ```
#[derive(Clone)]
pub struct McpServer {
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: Vec<ToolEntry>,
    pub(crate) resources: Vec<ResourceEntry>,
    pub(crate) prompts: Vec<PromptEntry>,
    pub(crate) completion: Option<CompletionHandler>,
    pub(crate) authenticate: Option<Authenticator>,
    #[cfg(feature = "oauth")]
    pub(crate) oauth: Option<OAuth>,
    pub(crate) on_error: Option<ErrorHook>,
    pub(crate) origins: OriginPolicy,
    pub(crate) cors: CorsPolicy,
    pub(crate) inline_deadline: Duration,
    code_version: Option<String>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("info", &self.info)
            .field("tools", &self.tool_names())
            .field("resources", &self.resources.len())
            .field("prompts", &self.prompt_names())
            .field("completion", &self.completion.is_some())
            .field("origins", &self.origins)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server named `name` at `version`, serving nothing yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        McpServer {
            info: Implementation {
                name: name.into(),
                version: version.into(),
                title: None,
            },
            instructions: None,
            tools: Vec::new(),
            resources: Vec::new(),
            prompts: Vec::new(),
            completion: None,
            authenticate: None,
            #[cfg(feature = "oauth")]
            oauth: None,
            on_error: None,
            origins: OriginPolicy::default(),
            cors: CorsPolicy::default(),
            inline_deadline: DEFAULT_INLINE_DEADLINE,
            code_version: None,
        }
    }

    /// Names the code every task created from now on runs under: `tasks/get` shows it under
    /// `_meta["io.durable-mcp-server/codeVersion"]`, so that an operator can tell which tasks
    /// in flight started on which deploy (and when a patch gate's old side can be retired).
    /// By default it is the server's version, given to [`new`](Self::new); set it to a build
    /// id or commit when the version does not change with every deploy.
    #[must_use]
    pub fn code_version(mut self, version: impl Into<String>) -> Self {
        self.code_version = Some(version.into());
        self
    }

    /// Sets the instructions `server/discover` gives clients.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a task tool: a [`TaskTool`], or a `#[mcp_task]` fn by its name.
    ///
    /// # Panics
    ///
    /// If a tool of the same name is already registered (a programming error).
    #[must_use]
    pub fn task(mut self, task: impl IntoTaskTool) -> Self {
        let task = task.into_task_tool();
        self.check_unique(&task.tool.name);
        self.tools.push(ToolEntry::Task(task));
        self
    }

    /// Adds a plain tool, answering each call at once: a `#[tool]` fn by its name, or a
    /// [`PlainTool`].
    ///
    /// # Panics
    ///
    /// If a tool of the same name is already registered (a programming error).
    #[must_use]
    pub fn tool(mut self, tool: impl IntoPlainTool) -> Self {
        let tool = tool.into_plain_tool();
        self.check_unique(&tool.tool.name);
        self.tools.push(ToolEntry::Plain(tool));
        self
    }

    /// Adds a prompt: `handler` expands it for each `prompts/get`, once the router has checked
    /// that the request carries every argument the prompt marks required. Like a plain tool,
    /// it may ask the client for input first ([`Outcome::InputRequired`](super::Outcome)).
    ///
    /// ```
    /// use durable_mcp::McpServer;
    /// use durable_mcp::PromptCall;
    /// use durable_mcp::wire::{GetPromptResult, Prompt, PromptArgument};
    ///
    /// let server = McpServer::new("reviewer", "1.0.0").prompt(
    ///     Prompt::new("review")
    ///         .description("Asks for a review of some code.")
    ///         .argument(PromptArgument::new("code").description("The code").required()),
    ///     |call: PromptCall| async move {
    ///         let code = &call.arguments["code"];
    ///         Ok(GetPromptResult::user_text(format!("Please review:\n{code}")).into())
    ///     },
    /// );
    /// assert_eq!(server.prompt_names(), ["review"]);
    /// ```
    ///
    /// # Panics
    ///
    /// If a prompt of the same name is already registered (a programming error).
    #[must_use]
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(PromptCall) -> Fut + 'static,
        Fut: Future<Output = Result<PromptOutcome, ErrorObject>> + 'static,
    {
        assert!(
            self.find_prompt(&prompt.name).is_none(),
            "a prompt named {:?} is already registered; prompt names must be unique",
            prompt.name
        );
        self.prompts.push(PromptEntry {
            prompt,
            handler: boxed(handler),
        });
        self
    }

    /// Answers `completion/complete` with `complete`, and advertises the `completions`
    /// capability. The router checks first that the reference names a registered prompt or
    /// resource, and sends at most 100 values (setting `hasMore` when it cuts). Without a
    /// handler, a known reference gets no values.
    #[must_use]
    pub fn completion<F, Fut>(mut self, complete: F) -> Self
    where
        F: Fn(CompletionCall) -> Fut + 'static,
        Fut: Future<Output = Result<Completion, ErrorObject>> + 'static,
    {
        self.completion = Some(Rc::new(move |call| Box::pin(complete(call))));
        self
    }

    /// Adds a resource; `read` gets the URI and returns its contents.
    #[must_use]
    pub fn resource<F, Fut>(self, resource: Resource, read: F) -> Self
    where
        F: Fn(String) -> Fut + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorObject>> + 'static,
    {
        self.add_resource(ResourceListing::Fixed(resource), read)
    }

    /// Adds a resource template; `read` gets every URI that starts with the template's text
    /// before its first `{`.
    #[must_use]
    pub fn resource_template<F, Fut>(self, template: ResourceTemplate, read: F) -> Self
    where
        F: Fn(String) -> Fut + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorObject>> + 'static,
    {
        self.add_resource(ResourceListing::Template(template), read)
    }

    fn add_resource<F, Fut>(mut self, listing: ResourceListing, read: F) -> Self
    where
        F: Fn(String) -> Fut + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorObject>> + 'static,
    {
        let read: ResourceReader = Rc::new(move |uri| Box::pin(read(uri)));
        self.resources.push(ResourceEntry { listing, read });
        self
    }

    /// Authenticates every request from its headers: `Ok(Some(principal))` binds the tasks the
    /// request creates to that principal, and only it may see or change them afterwards;
    /// `Ok(None)` is an anonymous caller; `Err(message)` refuses the request with HTTP 401.
    #[must_use]
    pub fn authenticate(
        mut self,
        authenticate: impl Fn(&Headers) -> Result<Option<String>, String> + 'static,
    ) -> Self {
        self.authenticate = Some(Rc::new(authenticate));
        self
    }

    /// Whether the server checks who calls it: with OAuth, or an `authenticate` hook.
    #[cfg(native_host)]
    pub(crate) fn checks_callers(&self) -> bool {
        self.checks_tokens() || self.authenticate.is_some()
    }

    /// Calls `hook` with the method and the error for every internal error (-32603) the router
    /// answers, for logging.
    #[must_use]
    pub fn on_error(mut self, hook: impl Fn(&str, &ErrorObject) + 'static) -> Self {
        self.on_error = Some(Rc::new(hook));
        self
    }

    /// Also accepts requests whose `Host` or `Origin` names `host` (loopback is always
    /// accepted).
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.origins.hosts.push(host.into());
        self
    }

    /// Also accepts requests whose `Host` is a subdomain of `domain` (`allow_hosts_under
    /// ("workers.dev")` accepts `app.team.workers.dev`, not `workers.dev` or
    /// `evilworkers.dev`), and an `Origin` under it only when it names the request's own host
    /// (a page the server itself served).
    ///
    /// For domains whose names never resolve to a loopback or private address, so that no web
    /// page can rebind them onto a local server: the Cloudflare host accepts its own
    /// `workers.dev` this way. A page on another subdomain is a different site, and its
    /// requests are refused like any other origin's.
    #[must_use]
    pub fn allow_hosts_under(mut self, domain: impl Into<String>) -> Self {
        self.origins.domains.push(domain.into());
        self
    }

    /// Lets web pages served from `origin` (`scheme://host[:port]`, e.g.
    /// `http://localhost:5173`) call the endpoint: preflights from it are answered, answers
    /// to it carry `Access-Control-Allow-Origin`, and the Origin check accepts it.
    #[must_use]
    pub fn allow_origin(mut self, origin: &str) -> Self {
        self.cors.allow(origin);
        self
    }

    /// [`allow_origin`](Self::allow_origin) for each origin in `list`, separated by commas or
    /// spaces (the form of the `DURABLE_MCP_CORS_ORIGINS` setting of both hosts).
    #[must_use]
    pub fn allow_origins(self, list: &str) -> Self {
        list.split([',', ' '])
            .filter(|origin| !origin.is_empty())
            .fold(self, Self::allow_origin)
    }

    /// How long a call to an optional task tool waits inline, for a client that cannot poll
    /// (no Tasks extension), before it answers that the task is still running (default
    /// 5 minutes). Each input round of such a call waits up to it anew. The task goes on
    /// durably either way; the answer names it and the extension a client must declare to
    /// follow it.
    #[must_use]
    pub fn inline_deadline(mut self, deadline: Duration) -> Self {
        self.inline_deadline = deadline;
        self
    }

    /// Accepts any `Host` and `Origin`: only behind a proxy that validates them.
    #[must_use]
    pub fn allow_any_host(mut self) -> Self {
        self.origins.any = true;
        self
    }

    /// The registered tool names, in registration order.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(ToolEntry::name).collect()
    }

    /// The registered prompt names, in registration order.
    pub fn prompt_names(&self) -> Vec<&str> {
        self.prompts
            .iter()
            .map(|entry| entry.prompt.name.as_str())
            .collect()
    }

    /// The task definitions, for the host's engine (also `TaskRegistry::from(&server)`).
    pub fn task_registry(&self) -> TaskRegistry {
        self.tools
            .iter()
            .filter_map(|entry| match entry {
                ToolEntry::Task(task) => Some(task.definition.clone()),
                ToolEntry::Plain(_) => None,
            })
            .fold(
                TaskRegistry::new().code_version(
                    self.code_version
                        .clone()
                        .unwrap_or_else(|| self.info.version.clone()),
                ),
                TaskRegistry::register,
            )
    }

    /// Whether any task tool is registered (the Tasks extension is advertised only then).
    pub fn has_tasks(&self) -> bool {
        self.tools
            .iter()
            .any(|entry| matches!(entry, ToolEntry::Task(_)))
    }

    pub(crate) fn find_tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.iter().find(|entry| entry.name() == name)
    }

    pub(crate) fn find_prompt(&self, name: &str) -> Option<&PromptEntry> {
        self.prompts.iter().find(|entry| entry.prompt.name == name)
    }

    fn check_unique(&self, name: &str) {
        assert!(
            self.find_tool(name).is_none(),
            "a tool named {name:?} is already registered; tool names must be unique"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;

    static SCHEMAS_BUILT: AtomicUsize = AtomicUsize::new(0);

    fn counted_schema() -> Value {
        SCHEMAS_BUILT.fetch_add(1, Ordering::SeqCst);
        json!({ "type": "object", "properties": { "n": { "type": "integer" } } })
    }

    #[test]
    fn a_macro_task_tools_input_schema_is_built_once_when_first_described() {
        let definition = TaskDefinition::new("count", |_, _| Box::pin(async { Ok(json!(null)) }));
        let server = McpServer::new("lazy", "1.0.0")
            .task(TaskTool::with_lazy_schema(definition, counted_schema).description("Counts."));
        // Building the server, its registry, and finding the tool by name build nothing.
        assert_eq!(server.tool_names(), ["count"]);
        let _registry = server.task_registry();
        let entry = server.find_tool("count").expect("registered");
        assert_eq!(SCHEMAS_BUILT.load(Ordering::SeqCst), 0);

        let described = entry.tool();
        assert_eq!(described.input_schema["properties"]["n"]["type"], "integer");
        assert_eq!(described.description.as_deref(), Some("Counts."));
        assert_eq!(entry.tool(), described);
        assert_eq!(SCHEMAS_BUILT.load(Ordering::SeqCst), 1);
    }
}
