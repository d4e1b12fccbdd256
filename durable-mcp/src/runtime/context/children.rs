//! Child tasks from a body: [`TaskContext::start_child`] and the [`ChildTask`] handle it
//! returns, and the cancellation of a cancelled task's children.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ErasedSerialize, TaskContext};
use crate::core::activation::{ChildStart, NameUse};
use crate::core::{ChildOutcome, EngineError, ParentLink, TaskStatus};
use crate::runtime::CreateTask;
use crate::runtime::error::TaskError;
use crate::runtime::ports::{LocalBoxFuture, StoreError};
use crate::runtime::route::TaskRoute;

/// The registered tool a child task runs: its name (`"resize"`), or the fn of an
/// [`#[mcp_task]`](crate::mcp_task) (`resize`), which names it for you. The fn is called to
/// read the name, which builds its tool (input schema included) on every start and replay:
/// in a loop over many children, pass the name.
pub trait ChildTool {
    /// The tool's name.
    fn tool_name(self) -> String;
}

impl ChildTool for &str {
    fn tool_name(self) -> String {
        self.to_owned()
    }
}

impl ChildTool for String {
    fn tool_name(self) -> String {
        self
    }
}

/// A child task a body started with [`TaskContext::start_child`]: wait for it with
/// [`result`](Self::result) or [`output`](Self::output).
#[derive(Debug)]
pub struct ChildTask<'a> {
    cx: &'a TaskContext,
    key: String,
    task_id: String,
}

impl ChildTask<'_> {
    /// The child's task id (a client may poll it with `tasks/get`).
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The journal key the child was started under (`name`, `name#2`, ...).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Waits, durably, for the child to end, and returns its tool result (`content`, and
    /// `structuredContent` if it has one). The parent is unloaded while it waits, like for an
    /// elicitation, and runs again when the child ends. A child that failed, was cancelled,
    /// or completed with a tool error (`isError`) is [`TaskError::ChildFailed`], which the body
    /// may handle or pass on with `?`.
    pub async fn result(&self) -> Result<Value, TaskError> {
        let cx = self.cx;
        let outcome = cx.act(|m, _| m.join_child(&self.key)).await;
        match ChildOutcome::from_stored(Some(&outcome)) {
            ChildOutcome::Completed { result } if !is_tool_error(&result) => Ok(result),
            ChildOutcome::Completed { result } => Err(self.failed(
                TaskStatus::Completed,
                format!("its tool error: {}", result_text(&result)),
            )),
            ChildOutcome::Failed { error } => Err(self.failed(TaskStatus::Failed, error.message)),
            ChildOutcome::Cancelled => Err(self.failed(TaskStatus::Cancelled, "it was cancelled")),
            ChildOutcome::Refused { message } => Err(self.failed(TaskStatus::Failed, message)),
        }
    }

    /// Like [`result`](Self::result), read as a `T`: the child's `structuredContent` (an
    /// `#[mcp_task]` returning `Json<T>`), or else its first text block (one returning a
    /// `String`).
    pub async fn output<T: DeserializeOwned>(&self) -> Result<T, TaskError> {
        let result = self.result().await?;
        let value = match result.get("structuredContent") {
            Some(structured) => structured.clone(),
            None => Value::String(result_text(&result)),
        };
        serde_json::from_value(value).map_err(|error| {
            TaskError::failed(format!(
                "the output of child task {:?} ({}) is not what the parent reads: {error}",
                self.key, self.task_id
            ))
        })
    }

    fn failed(&self, status: TaskStatus, message: impl Into<String>) -> TaskError {
        TaskError::ChildFailed {
            key: self.key.clone(),
            task_id: self.task_id.clone(),
            status,
            message: message.into(),
        }
    }
}

impl TaskContext {
    /// Starts a child task: a task of the registered tool `tool` (its name, or its
    /// `#[mcp_task]` fn) with `input`, which runs on its own and which this body may wait for
    /// with [`ChildTask::result`].
    ///
    /// ```ignore
    /// let small = cx.start_child("small", resize, Resize { width: 320 }).await?;
    /// let large = cx.start_child("large", resize, Resize { width: 1280 }).await?;
    /// let (small, large) = futures::try_join!(small.output::<Url>(), large.output::<Url>())?;
    /// ```
    ///
    /// The start is keyed by `name` plus its occurrence, like a step, and is exactly-once: the
    /// child's id derives from this task's id and that key, so replays and crashes find the
    /// child they started instead of starting another. The child is a task like any other: a
    /// client sees it with `tasks/get` and `tasks/list` (same principal and listing as this
    /// task), where its `_meta["io.modelcontextprotocol/relatedTaskIds"]` names this task.
    /// Cancelling this task cancels the children it has not heard back from, before it shows
    /// `cancelled`. A child this task does not wait for runs on after it ends.
    ///
    /// A tool that is not registered, or an input the child's store refuses, fails the start
    /// with [`TaskError::ChildFailed`] (recorded: replays fail alike).
    pub fn start_child<'a>(
        &'a self,
        name: &str,
        tool: impl ChildTool,
        input: impl Serialize,
    ) -> LocalBoxFuture<'a, Result<ChildTask<'a>, TaskError>> {
        let key = self.claim(name, NameUse::ChildStart);
        let tool = tool.tool_name();
        let input = input.to_value();
        Box::pin(async move {
            let key = self.proceed(key).await;
            let input = match input {
                Ok(input) => input,
                Err(error) => {
                    let what = format!("the input of child task {key:?}");
                    return self.fail(EngineError::not_serialisable(what, &error)).await;
                }
            };
            self.new_ground(&key).await;
            let task_id = match self.act(|m, now| m.start_child(&key, now)).await {
                ChildStart::Started(task_id) => task_id,
                ChildStart::Refused(message) => {
                    let task_id = crate::core::child::child_task_id(&self.task_id, &key);
                    return Err(TaskError::ChildFailed {
                        key,
                        task_id,
                        status: TaskStatus::Failed,
                        message,
                    });
                }
                ChildStart::Create(task_id) => {
                    self.create_child(&key, &task_id, tool, input).await?;
                    task_id
                }
            };
            Ok(ChildTask {
                cx: self,
                key,
                task_id,
            })
        })
    }

    /// Creates the child under `task_id` once its row is durable; records that it exists, or
    /// that it cannot.
    async fn create_child(
        &self,
        key: &str,
        task_id: &str,
        tool: String,
        input: Value,
    ) -> Result<(), TaskError> {
        let tasks = self.other_tasks().await;
        if let Err(error) = self.host.store.flush() {
            return self.store_failed(error).await;
        }
        let mut request = CreateTask::new(tool, input);
        request.task_id = Some(task_id.to_owned());
        request.principal = self.principal.clone();
        request.list_scope = self.list_scope.clone();
        request.parent = Some(ParentLink {
            task_id: self.task_id.clone(),
            key: key.to_owned(),
            notified: false,
            root: Some(self.root.clone()),
        });
        match self.while_busy(tasks.create(request)).await {
            Ok(_) => {
                let now = self.now_on_host();
                self.with(|m| m.child_created(key, now));
                Ok(())
            }
            Err(error) if error.may_pass_later() => {
                let message = format!("starting child task {key:?}: {error}");
                self.store_failed(StoreError(message)).await
            }
            Err(error) => {
                let message = error.to_string();
                self.act(|m, now| m.child_refused(key, message.clone(), now))
                    .await;
                Err(TaskError::ChildFailed {
                    key: key.to_owned(),
                    task_id: task_id.to_owned(),
                    status: TaskStatus::Failed,
                    message,
                })
            }
        }
    }

    /// Whether a cancellation has children of this task to cancel.
    pub(crate) fn has_children_to_cancel(&self) -> bool {
        !self.with(|m| m.children_to_cancel()).is_empty()
    }

    /// Cancels the children this task has not heard back from (its cleanup after a cancel),
    /// recording each as cancelled. Parks when one cannot be reached; the next activation
    /// tries again.
    pub(crate) async fn cancel_children(&self) {
        let children = self.with(|m| m.children_to_cancel());
        if children.is_empty() {
            return;
        }
        let tasks = self.other_tasks().await;
        for (key, child_id) in children {
            match tasks.cancel(&child_id, self.principal.as_deref()).await {
                // Refused (gone, never created): nothing is left to stop.
                Err(error) if error.may_pass_later() => {
                    let message = format!("cancelling child task {key:?}: {error}");
                    return self.store_failed(StoreError(message)).await;
                }
                _ => self.act(|m, now| m.child_cancelled(&key, now)).await,
            }
        }
    }

    /// The host's way to other tasks, or the task fails here with the reason.
    async fn other_tasks(&self) -> std::rc::Rc<dyn TaskRoute> {
        match &self.tasks {
            Some(tasks) => std::rc::Rc::clone(tasks),
            None => self.fail(EngineError::NoTaskRoute).await,
        }
    }
}

fn is_tool_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// The text blocks of a tool result, joined.
fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}
