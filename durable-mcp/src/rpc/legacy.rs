//! The 2025-era lane (revisions 2025-03-26 to 2025-11-25): `initialize` and the methods of
//! that era, served by the same handlers and the same engine as the 2026-07-28 lane. It adds
//! the 2025-11-25 experimental tasks (`params.task`, `tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel`) as a second view of the same tasks, and runs a task tool
//! inline for a client that knows no tasks.
//!
//! Every error travels with HTTP 200 (2025 clients read no JSON-RPC error from a 4xx), except
//! the transport's own refusals: an unknown session (404) and a failed authentication (401).

use crate::apart::apart;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::{self, LocalBoxStream};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::cursor::{decode_cursor, encode_cursor};
use super::dispatch::{
    Call, Method, Reply, Started, principal_list_scope, progress_token, read_params,
};
use super::error::RpcError;
use super::exchange::{Answered, Exchange, Shape};
use super::follow::{Emit, Follow, OnInput, Outcome, Refusal};
use super::http::Headers;
use super::listeners::Listeners;
use super::notify::LogLevel;
use super::request::{Handler, Outcome as RequestOutcome, ToolCall};
use super::server::{McpServer, Preparation, TaskTool, ToolEntry};
use super::session::{LegacySession, SESSION_HEADER};
use crate::core::TaskSnapshot;
use crate::runtime::CreateTask;
use crate::runtime::TaskRoute;
use crate::wire::CallToolResult;
use crate::wire::LEGACY_VERSIONS;
use crate::wire::envelope::RequestMeta;
use crate::wire::legacy::{LegacyTask, create_task_result, legacy_status, strip_modern_fields};

/// The newest 2025 revision, the one that has tasks.
const TASKS_VERSION: &str = "2025-11-25";

/// How many tasks one `tasks/list` page holds.
const LIST_PAGE: usize = 50;

/// How long `tasks/cancel` waits for the task to settle as cancelled before it answers.
const CANCEL_SETTLE: Duration = Duration::from_secs(5);

/// What the lane answers, before it is framed.
pub(crate) enum LegacyReply {
    /// A result or a stream, as the 2026 lane answers.
    Reply(Reply),
    /// `initialize`'s result, with the session id to send in `Mcp-Session-Id`.
    Initialized(Value, String),
}

/// The session a request carries, and the envelope the shared handlers read for it.
struct Session {
    negotiated: Option<LegacySession>,
    envelope: RequestMeta,
}

/// One 2025-era request.
pub(crate) struct LegacyCall<'a> {
    pub(crate) server: &'a McpServer,
    pub(crate) tasks: &'a Rc<dyn TaskRoute>,
    pub(crate) headers: &'a Headers,
    pub(crate) method: &'a str,
    pub(crate) params: &'a Map<String, Value>,
    pub(crate) principal: Option<String>,
    /// The scopes the caller's access token grants; `None` when the server checks no tokens.
    pub(crate) granted: Option<Vec<String>>,
    /// The host's open listen streams, which a handler's list changes reach.
    pub(crate) listeners: &'a Listeners,
}

impl LegacyCall<'_> {
    /// Answers the request.
    pub(crate) async fn answer(self) -> Result<LegacyReply, RpcError> {
        if self.method == "initialize" {
            return self
                .initialize()
                .map(|(result, session)| LegacyReply::Initialized(result, session.encode()));
        }
        let negotiated = self.session()?;
        let session = Session {
            envelope: envelope(&negotiated),
            negotiated,
        };
        // Each arm apart: a request compiles only the code of its method (see `apart`).
        let reply = match self.method {
            "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
                Reply::Value(json!({}))
            }
            "tools/list" => Reply::Value(apart(self.list_tools(&session)).await?),
            "tools/call" => apart(self.call_tool(&session)).await?,
            // A prompt may ask the client for input first, over the stream.
            "prompts/get" => self
                .shared(&session)
                .dispatch(Method::PromptsGet)
                .await
                .map_err(at_200)?,
            "tasks/get" => Reply::Value(json!(LegacyTask::of(&apart(self.task()).await?))),
            "tasks/result" => apart(self.task_result()).await?,
            "tasks/list" => Reply::Value(apart(self.list_tasks(&session)).await?),
            "tasks/cancel" => Reply::Value(apart(self.cancel_task()).await?),
            other => match Method::parse(other).filter(|method| method.is_shared()) {
                Some(method) => {
                    let shared = self.shared(&session);
                    let result = apart(shared.answer(method)).await.map_err(at_200)?;
                    Reply::Value(strip_modern_fields(result))
                }
                None => {
                    let mut error = RpcError::method_not_found(other);
                    error.error.message = format!(
                        "Method not found: {other:?} (this server speaks MCP {} after \
                         initialize, and 2026-07-28)",
                        LEGACY_VERSIONS.join(", ")
                    );
                    return Err(at_200(error));
                }
            },
        };
        Ok(LegacyReply::Reply(reply))
    }

    /// `initialize`: the newest 2025 revision both sides know, and what this server offers.
    fn initialize(&self) -> Result<(Value, LegacySession), RpcError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct InitializeParams {
            protocol_version: String,
            #[serde(default)]
            capabilities: Value,
        }
        let params: InitializeParams = read_params(self.params, "initialize")?;
        let version = LEGACY_VERSIONS
            .iter()
            .find(|known| **known == params.protocol_version)
            .unwrap_or(&LEGACY_VERSIONS[0]);
        let session =
            LegacySession::negotiated(version, &params.capabilities).map_err(RpcError::internal)?;
        let server = self.server;
        let mut capabilities = json!({ "tools": {}, "logging": {} });
        if !server.resources.is_empty() {
            capabilities["resources"] = json!({});
        }
        if !server.prompts.is_empty() {
            capabilities["prompts"] = json!({});
        }
        if server.completion.is_some() {
            capabilities["completions"] = json!({});
        }
        if server.has_tasks() && *version == TASKS_VERSION {
            capabilities["tasks"] =
                json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } });
        }
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": server.info,
        });
        if let Some(instructions) = &server.instructions {
            result["instructions"] = json!(instructions);
        }
        Ok((result, session))
    }

    /// The session the request carries: none is fine (sessions are optional), one this
    /// server did not issue is 404, so that the client starts a new one.
    fn session(&self) -> Result<Option<LegacySession>, RpcError> {
        let Some(id) = self.headers.get(SESSION_HEADER) else {
            return Ok(None);
        };
        match LegacySession::decode(&id) {
            Some(session) => Ok(Some(session)),
            None => {
                let mut error = RpcError::invalid_request(
                    "Session not found: this Mcp-Session-Id was not issued by this server; \
                     send initialize again",
                );
                error.status = 404;
                Err(error)
            }
        }
    }

    /// The shared handlers' view of this request: the envelope a 2026 request with the same
    /// capabilities would carry, without the Tasks extension (the lane handles tasks itself).
    fn shared<'b>(&'b self, session: &'b Session) -> Call<'b> {
        Call {
            server: self.server,
            tasks: self.tasks,
            list_scope: list_scope(self.principal.as_deref(), session.negotiated.as_ref()),
            // The level `logging/setLevel` sets is not kept (no server state): every message
            // is sent, and the client filters.
            log_level: Some(LogLevel::Debug),
            asks_client: true,
            params: self.params,
            meta: &session.envelope,
            principal: self.principal.clone(),
            granted: self.granted.clone(),
            headers: self.headers,
            listeners: self.listeners,
        }
    }

    async fn list_tools(&self, session: &Session) -> Result<Value, RpcError> {
        let mut result = strip_modern_fields(
            self.shared(session)
                .answer(Method::ToolsList)
                .await
                .map_err(at_200)?,
        );
        // Any task tool runs inline for a client that cannot poll, so none requires tasks.
        if let Some(tools) = result["tools"].as_array_mut() {
            for (tool, entry) in tools.iter_mut().zip(&self.server.tools) {
                if let ToolEntry::Task(_) = entry {
                    tool["execution"] = json!({ "taskSupport": "optional" });
                }
            }
        }
        Ok(result)
    }

    /// `tools/call`: a plain tool answers; a task tool creates its task and answers it as a
    /// 2025-11-25 task when the client asked for one (`params.task`), else follows it inline.
    async fn call_tool(&self, session: &Session) -> Result<Reply, RpcError> {
        let call = self.shared(session);
        let (entry, tool_call) = call.resolve_tool().map_err(at_200)?;
        let task = match entry {
            ToolEntry::Task(task) => task,
            ToolEntry::Plain(_) => {
                let reply = call.dispatch(Method::ToolsCall).await.map_err(at_200)?;
                return Ok(match reply {
                    Reply::Value(result) => Reply::Value(strip_modern_fields(result)),
                    stream => stream,
                });
            }
        };
        let after_start = AfterStart {
            as_task: self.params.get("task").is_some_and(Value::is_object),
            follow: Follow {
                tasks: Rc::clone(self.tasks),
                task_id: String::new(),
                principal: self.principal.clone(),
                progress_token: progress_token(self.params),
                on_input: if session.negotiated.as_ref().is_some_and(|s| s.elicitation) {
                    OnInput::Ask
                } else {
                    OnInput::Refuse(Refusal::ToolError)
                },
                outcome: Outcome::Legacy,
                deadline: Some(self.server.inline_deadline),
            },
        };
        if task.prepare.is_some() {
            return self.prepare_then_start(&call, task, tool_call, after_start);
        }
        match call.start_task(task, tool_call).await.map_err(at_200)? {
            Started::Task(snapshot) => Ok(after_start.reply(*snapshot)),
            Started::Answered(answer) => Ok(Reply::Value(strip_modern_fields(answer))),
        }
    }

    /// A task tool with a `prepare` hook: the hook runs as a handler in an exchange, so that
    /// the input it asks for is asked of the client over the stream (and it runs again with
    /// the answers); once it lets the task start, the task is created and answered as the call
    /// asked.
    fn prepare_then_start(
        &self,
        call: &Call<'_>,
        task: &TaskTool,
        tool_call: ToolCall,
        after_start: AfterStart,
    ) -> Result<Reply, RpcError> {
        let created: Rc<RefCell<Option<TaskSnapshot>>> = Rc::default();
        let handler: Handler<Value, Value> = {
            let prepare = task.prepare.clone();
            let tasks = Rc::clone(self.tasks);
            let created = Rc::clone(&created);
            let (tool, principal, scope) = (
                task.tool.name.clone(),
                self.principal.clone(),
                call.list_scope.clone(),
            );
            Rc::new(move |request: ToolCall| {
                let preparation = match &prepare {
                    Some(prepare) => prepare(&request),
                    None => Ok(Preparation::Start(request.arguments)),
                };
                let (tasks, created) = (Rc::clone(&tasks), Rc::clone(&created));
                let mut create = CreateTask::new(tool.clone(), Value::Null);
                create.principal.clone_from(&principal);
                create.list_scope.clone_from(&scope);
                Box::pin(async move {
                    match preparation? {
                        Preparation::InputRequired(input) => {
                            Ok(RequestOutcome::InputRequired(input))
                        }
                        Preparation::Answer(result) => Ok(RequestOutcome::Complete(json!(result))),
                        Preparation::Start(input) => {
                            create.input = input;
                            let snapshot = tasks
                                .create(create)
                                .await
                                .map_err(|e| RpcError::from(e).error)?;
                            *created.borrow_mut() = Some(snapshot);
                            Ok(RequestOutcome::Complete(Value::Null))
                        }
                    }
                })
            })
        };
        let exchange = Exchange {
            handler,
            call: tool_call,
            ask_client: true,
            tasks: Rc::clone(self.tasks),
        };
        let shape = Shape {
            answer: prepared,
            undeclared: |reason| Ok(json!(CallToolResult::error(format!("the tool {reason}")))),
        };
        // The exchange ends once, so the task is answered at most once.
        let mut after_start = Some(after_start);
        let mut started = move |answer: Value| {
            let snapshot = created.borrow_mut().take();
            match (snapshot, after_start.take()) {
                (Some(snapshot), Some(after_start)) => after_start.reply(snapshot),
                _ => Reply::Value(answer),
            }
        };
        Ok(match exchange.run(shape) {
            Answered::Now(Ok(outcome)) => started(prepared(outcome)),
            Answered::Now(Err(error)) => return Err(RpcError::with_status(200, error)),
            Answered::Streamed(emits) => {
                Reply::Stream(Box::pin(emits.flat_map(move |emit| match emit {
                    Emit::Done(Ok(answer)) => match started(answer) {
                        Reply::Value(value) => single(Emit::Done(Ok(value))),
                        Reply::Stream(stream) => stream,
                    },
                    other => single(other),
                })))
            }
        })
    }

    /// The task `params.taskId` names, as its caller may see it.
    async fn task(&self) -> Result<TaskSnapshot, RpcError> {
        let task_id = task_id(self.params)?;
        let snapshot =
            (self.tasks.get(task_id, self.principal.as_deref()).await).map_err(at_200)?;
        (self
            .server
            .check_scopes(self.granted.as_deref(), &snapshot.tool_name))
        .map_err(at_200)?;
        Ok(snapshot)
    }

    /// `tasks/result`: what the call would have answered, once the task is done; meanwhile
    /// the task's requests for input travel on the stream, and the client's answers reach
    /// the task as a `tasks/update` would.
    async fn task_result(&self) -> Result<Reply, RpcError> {
        let snapshot = self.task().await?;
        let follow = Follow {
            tasks: Rc::clone(self.tasks),
            task_id: snapshot.task_id.clone(),
            principal: self.principal.clone(),
            progress_token: None,
            on_input: OnInput::Ask,
            outcome: Outcome::TaskResult,
            deadline: None,
        };
        if snapshot.status.is_terminal() {
            return follow.outcome(snapshot).await.map(Reply::Value);
        }
        Ok(Reply::Stream(follow.into_stream(snapshot)))
    }

    /// `tasks/list`: the tasks of this caller (its principal, or else its session), oldest
    /// first.
    async fn list_tasks(&self, session: &Session) -> Result<Value, RpcError> {
        let cursor = match self.params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) => Some(cursor.as_str()),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params for tasks/list: \"cursor\" must be a string",
                ));
            }
        };
        let Some(scope) = list_scope(self.principal.as_deref(), session.negotiated.as_ref()) else {
            // An anonymous caller without a session has no tasks of its own to list.
            return Ok(json!({ "tasks": [] }));
        };
        let after = cursor.map(decode_cursor).transpose()?;
        let page = self
            .tasks
            .list(&scope, after.as_ref(), LIST_PAGE)
            .await
            .map_err(at_200)?;
        // A task whose tool needs scopes the token lacks is left out, as it could not be read.
        let readable = |task: &&TaskSnapshot| {
            (self
                .server
                .check_scopes(self.granted.as_deref(), &task.tool_name))
            .is_ok()
        };
        let tasks: Vec<LegacyTask> = page
            .items
            .iter()
            .filter(readable)
            .map(LegacyTask::of)
            .collect();
        let mut result = json!({ "tasks": tasks });
        if let Some(next) = &page.next {
            result["nextCursor"] = json!(encode_cursor(next));
        }
        Ok(result)
    }

    /// `tasks/cancel`: -32602 for a task already done; else the task, cancelled once the
    /// cancellation settled (at once unless a step is running).
    async fn cancel_task(&self) -> Result<Value, RpcError> {
        let before = self.task().await?;
        if legacy_status(&before).is_terminal() {
            return Err(RpcError::invalid_params(format!(
                "Cannot cancel task {}: it is already {}",
                before.task_id,
                legacy_status(&before).as_str()
            )));
        }
        let caller = self.principal.as_deref();
        self.tasks
            .cancel(&before.task_id, caller)
            .await
            .map_err(at_200)?;
        let mut waited = Duration::ZERO;
        let mut pause = Duration::from_millis(5);
        loop {
            let now = self
                .tasks
                .get(&before.task_id, caller)
                .await
                .map_err(at_200)?;
            if now.status.is_terminal() || waited >= CANCEL_SETTLE {
                return Ok(json!(LegacyTask::of(&now)));
            }
            self.tasks.pause(pause).await;
            waited += pause;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}

impl Method {
    /// Whether the 2025 lane answers the method with the 2026 lane's handler.
    fn is_shared(self) -> bool {
        matches!(
            self,
            Method::ResourcesList
                | Method::ResourceTemplatesList
                | Method::ResourcesRead
                | Method::PromptsList
                | Method::CompletionComplete
        )
    }
}

/// What a created task is answered with on the 2025 lane: `{task}` when the call asked for a
/// task, else the task followed inline.
struct AfterStart {
    as_task: bool,
    follow: Follow,
}

impl AfterStart {
    fn reply(self, snapshot: TaskSnapshot) -> Reply {
        if self.as_task {
            return Reply::Value(create_task_result(&snapshot));
        }
        let follow = Follow {
            task_id: snapshot.task_id.clone(),
            ..self.follow
        };
        Reply::Stream(follow.into_stream(snapshot))
    }
}

fn single(emit: Emit) -> LocalBoxStream<'static, Emit> {
    Box::pin(stream::once(std::future::ready(emit)))
}

/// What the `prepare` hook's handler answered, as the call's result: what the hook answered
/// instead of a task, or nothing once the task was created (see `prepare_then_start`).
fn prepared(outcome: RequestOutcome<Value>) -> Value {
    match outcome {
        RequestOutcome::Complete(result) => result,
        RequestOutcome::InputRequired(input) => json!(input),
    }
}

/// The envelope the shared handlers read: this session's capabilities, no extension.
fn envelope(session: &Option<LegacySession>) -> RequestMeta {
    let session = session.clone().unwrap_or_default();
    RequestMeta {
        protocol_version: session.version.clone(),
        client_capabilities: session.capabilities(),
        client_info: None,
    }
}

/// Where the tasks of a caller are listed: its principal when it was authenticated, else its
/// session; an anonymous caller without a session has no listing.
pub(crate) fn list_scope(
    principal: Option<&str>,
    session: Option<&LegacySession>,
) -> Option<String> {
    match (principal, session) {
        (Some(principal), _) => Some(principal_list_scope(principal)),
        (None, Some(session)) => Some(format!("session:{}", session.nonce)),
        (None, None) => None,
    }
}

fn task_id(params: &Map<String, Value>) -> Result<&str, RpcError> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("Invalid params: \"taskId\" must be a string"))
}

/// The error with HTTP 200, as 2025 clients read JSON-RPC errors only from a 2xx; but an
/// authentication failure keeps its 401 or 403, and a busy server its 503 and `Retry-After`,
/// which HTTP clients act on.
fn at_200(error: impl Into<RpcError>) -> RpcError {
    let mut error = error.into();
    if !matches!(error.status, 401 | 403 | 503) {
        error.status = 200;
    }
    error
}
