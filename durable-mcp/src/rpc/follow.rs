//! Following a task for a client that does not poll it: a call answered inline (a client
//! without the Tasks extension) or a 2025-era `tasks/result`. The task runs on its host as
//! always; this only watches its snapshots ([`TaskRoute::watch`]: each change as it commits)
//! and turns what changes into what the client is told: progress, requests for input, and at
//! last the outcome. A route that cannot watch is read again and again instead, backing off.
//! Dropping the stream (the client went away) stops the watch and nothing else: the task goes
//! on durably.

use std::collections::{BTreeSet, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{Either, select};
use futures_util::stream::{self, LocalBoxStream};
use futures_util::{FutureExt, StreamExt};
use serde_json::{Value, json};

use super::error::RpcError;
use crate::core::{TaskSnapshot, TaskStatus};
use crate::runtime::{LocalBoxFuture, RouteError, TaskChanges, TaskRoute};
use crate::wire::jsonrpc::{ErrorObject, code};
#[cfg(feature = "mcp-2025")]
use crate::wire::legacy::LegacyTask;
#[cfg(feature = "mcp-2025")]
use crate::wire::tools::elicitation_request;

/// The `_meta` key tying a message to the task it concerns (2025-11-25).
#[cfg(feature = "mcp-2025")]
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The prefix of the ids of the requests a followed task sends the client; the client's
/// response comes back on another request and reaches the task through [`answer_id`].
const TASK_REQUEST_PREFIX: &str = "task/";

/// The first pause between two reads of a task, and the longest one (a route that cannot
/// watch).
const FIRST_PAUSE: Duration = Duration::from_millis(5);
const LONGEST_PAUSE: Duration = Duration::from_millis(200);

/// How often a watching follower counts the time it has waited (for its deadline and its
/// keep-alive comments): a timer, not a read.
const TICK: Duration = Duration::from_millis(200);

/// How long a stream stays silent before a comment keeps it open.
pub(crate) const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(15);

/// One thing to tell the client.
#[derive(Debug)]
pub(crate) enum Emit {
    /// A notification or a request to the client, as a JSON-RPC message.
    Message(Value),
    /// Nothing to say, but the stream is alive.
    KeepAlive,
    /// The answer to the client's request; the stream ends after it.
    Done(Result<Value, RpcError>),
}

/// What the follower does when the task asks for input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OnInput {
    /// Send each request to the client (it declared elicitation) and let its answers reach
    /// the task.
    #[cfg(feature = "mcp-2025")]
    Ask,
    /// Answer the call with an `InputRequiredResult` of the requests (2026-07-28 without the
    /// Tasks extension); the client retries with its answers. The keys `answered` were
    /// answered by this very call, and are not asked again while the task catches up.
    Return { answered: BTreeSet<String> },
    /// Cancel the task and answer with this error instead: the client cannot answer.
    Refuse(Refusal),
}

/// How a client that cannot answer input is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// -32021 naming the Tasks extension (2026-07-28).
    MissingTasksExtension,
    /// A tool error the model can read (2025: the client declared no elicitation).
    #[cfg(feature = "mcp-2025")]
    ToolError,
}

/// What the outcome is answered as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The `CallToolResult` a 2026-07-28 call answers (`resultType: "complete"`).
    Modern,
    /// The `CallToolResult` of a 2025 inline call.
    #[cfg(feature = "mcp-2025")]
    Legacy,
    /// The answer of a 2025 `tasks/result`: the result with the related-task `_meta`.
    #[cfg(feature = "mcp-2025")]
    TaskResult,
}

/// How to follow one task.
pub(crate) struct Follow {
    pub(crate) tasks: Rc<dyn TaskRoute>,
    pub(crate) task_id: String,
    pub(crate) principal: Option<String>,
    /// The `progressToken` of the call: each new status message is a progress notification.
    pub(crate) progress_token: Option<Value>,
    pub(crate) on_input: OnInput,
    pub(crate) outcome: Outcome,
    /// How long to follow before answering that the task is still running (inline runs);
    /// `None` follows to the end (`tasks/result`, which the client asked to block).
    pub(crate) deadline: Option<Duration>,
}

struct Follower {
    follow: Follow,
    /// What is still to be told before the next read.
    queued: VecDeque<Emit>,
    last_message: Option<String>,
    /// What the last `notifications/tasks/status` said (`tasks/result` streams only).
    #[cfg(feature = "mcp-2025")]
    last_status: Option<LegacyTask>,
    progress: u64,
    asked: BTreeSet<String>,
    pause: Duration,
    /// How the task's changes are learnt: asked for at the first wait (see [`Watch`]).
    watch: Watch,
    /// The running tick of a watching follower.
    tick: Option<LocalBoxFuture<'static, ()>>,
    silent_for: Duration,
    /// The time waited so far (pauses between reads, or ticks of a watch), measured against
    /// the deadline.
    waited: Duration,
    finished: bool,
}

impl Follow {
    /// What the client is told, from `first` (the task as it was created or last read) on.
    pub(crate) fn into_stream(self, first: TaskSnapshot) -> LocalBoxStream<'static, Emit> {
        let asked = match &self.on_input {
            OnInput::Return { answered } => answered.clone(),
            #[cfg(feature = "mcp-2025")]
            OnInput::Ask => BTreeSet::new(),
            OnInput::Refuse(_) => BTreeSet::new(),
        };
        let mut follower = Follower {
            follow: self,
            queued: VecDeque::new(),
            last_message: None,
            #[cfg(feature = "mcp-2025")]
            last_status: None,
            progress: 0,
            asked,
            pause: FIRST_PAUSE,
            watch: Watch::NotYet,
            tick: None,
            silent_for: Duration::ZERO,
            waited: Duration::ZERO,
            finished: false,
        };
        // A first report at once: the client learns the task started, and under which id.
        follower.report_progress(format!("task {} started", first.task_id));
        let refused = follower.see(first);
        Box::pin(stream::unfold(
            (follower, refused),
            |(mut follower, refused)| async move {
                if let Some(refused) = refused {
                    follower.refuse(refused).await;
                }
                let emit = follower.next().await?;
                Some((emit, (follower, None)))
            },
        ))
    }

    /// The outcome alone, every message dropped (a caller that cannot stream).
    pub(crate) async fn outcome(self, first: TaskSnapshot) -> Result<Value, RpcError> {
        let mut emits = self.into_stream(first);
        while let Some(emit) = futures_util::StreamExt::next(&mut emits).await {
            if let Emit::Done(outcome) = emit {
                return outcome;
            }
        }
        Err(RpcError::internal(
            "the task's follower ended without an outcome",
        ))
    }
}

impl Follower {
    async fn next(&mut self) -> Option<Emit> {
        loop {
            if let Some(emit) = self.queued.pop_front() {
                if matches!(emit, Emit::Done(_)) {
                    self.finished = true;
                }
                return Some(emit);
            }
            if self.finished {
                return None;
            }
            if self.silent_for >= KEEP_ALIVE_EVERY {
                self.silent_for = Duration::ZERO;
                return Some(Emit::KeepAlive);
            }
            if self
                .follow
                .deadline
                .is_some_and(|deadline| self.waited >= deadline)
            {
                self.queued.push_back(Emit::Done(self.still_running()));
                continue;
            }
            let read = match self.next_change().await {
                Some(read) => read,
                // A tick passed, or the watch ended: nothing to see yet.
                None => continue,
            };
            match read {
                Ok(snapshot) => {
                    if let Some(refusal) = self.see(snapshot) {
                        self.refuse(refusal).await;
                    }
                }
                Err(error) => self.queued.push_back(Emit::Done(Err(error.into()))),
            }
            if !self.queued.is_empty() {
                self.silent_for = Duration::ZERO;
                self.pause = FIRST_PAUSE;
            }
        }
    }

    /// The task's next state: its next change, when the route watches it (`None` when a tick
    /// passed first, or the watch ended), else a read after a pause. Counts the time waited.
    async fn next_change(&mut self) -> Option<Result<TaskSnapshot, RouteError>> {
        let follow = &self.follow;
        if let Watch::NotYet = self.watch {
            let principal = follow.principal.as_deref();
            self.watch = match follow.tasks.watch(&follow.task_id, principal).await {
                Ok(changes) => Watch::Changes(changes),
                Err(_) => Watch::Unavailable,
            };
        }
        let Watch::Changes(changes) = &mut self.watch else {
            follow.tasks.pause(self.pause).await;
            self.silent_for += self.pause;
            self.waited += self.pause;
            self.pause = (self.pause * 2).min(LONGEST_PAUSE);
            let principal = follow.principal.as_deref();
            return Some(follow.tasks.get(&follow.task_id, principal).await);
        };
        // One tick runs across changes, so that the time waited is counted whatever comes.
        let tick = self.tick.get_or_insert_with(|| follow.tasks.pause(TICK));
        let changed = match select(changes.next(), tick).await {
            Either::Left((change, _)) => Some(change),
            Either::Right(((), _)) => None,
        };
        match changed {
            Some(Some(snapshot)) => Some(Ok(self.settled(snapshot).await)),
            Some(None) => {
                // The way to the task broke (its host or object went away): read it instead.
                self.watch = Watch::Unavailable;
                None
            }
            None => {
                self.tick = None;
                self.silent_for += TICK;
                self.waited += TICK;
                None
            }
        }
    }

    /// The task once the burst of commits `first` began has passed: a body writes each of
    /// the questions it asks at once in a commit of its own, and a client is asked them in one
    /// round. Waits as long as a reading follower's first pause.
    async fn settled(&mut self, first: TaskSnapshot) -> TaskSnapshot {
        self.follow.tasks.pause(FIRST_PAUSE).await;
        let mut latest = first;
        let Watch::Changes(changes) = &mut self.watch else {
            return latest;
        };
        while let Some(next) = changes.next().now_or_never() {
            match next {
                Some(snapshot) => latest = snapshot,
                None => {
                    self.watch = Watch::Unavailable;
                    break;
                }
            }
        }
        latest
    }

    /// Queues what changed in `snapshot`; `Some` when the task asks input the client cannot
    /// give.
    fn see(&mut self, snapshot: TaskSnapshot) -> Option<(Refusal, String)> {
        #[cfg(feature = "mcp-2025")]
        self.report_status(&snapshot);
        if let Some(message) = &snapshot.status_message
            && snapshot.status_message != self.last_message
        {
            self.last_message = Some(message.clone());
            self.progress += 1;
            self.report_progress(message.clone());
        }
        match snapshot.status {
            TaskStatus::Working => None,
            TaskStatus::InputRequired => match self.follow.on_input {
                OnInput::Refuse(refusal) => Some((refusal, snapshot.tool_name)),
                #[cfg(feature = "mcp-2025")]
                OnInput::Ask => {
                    self.ask(&snapshot);
                    None
                }
                OnInput::Return { .. } => {
                    self.hand_back(&snapshot);
                    None
                }
            },
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled => {
                let outcome = self.outcome_of(snapshot);
                self.queued.push_back(Emit::Done(outcome));
                None
            }
        }
    }

    /// A progress notification with `message`, if the client asked for progress: the count
    /// of status messages so far, which only grows.
    fn report_progress(&mut self, message: String) {
        if let Some(token) = &self.follow.progress_token {
            self.queued.push_back(Emit::Message(json!({
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": { "progressToken": token, "progress": self.progress, "message": message },
            })));
        }
    }

    /// A `notifications/tasks/status` when the task's status or message changed, on a 2025
    /// `tasks/result` stream (its client declared tasks): the task as `tasks/get` shows it
    /// then, without its result.
    #[cfg(feature = "mcp-2025")]
    fn report_status(&mut self, snapshot: &TaskSnapshot) {
        if self.follow.outcome != Outcome::TaskResult {
            return;
        }
        let task = LegacyTask::of(snapshot);
        let unchanged = self.last_status.as_ref().is_some_and(|last| {
            last.status == task.status && last.status_message == task.status_message
        });
        if unchanged {
            return;
        }
        self.queued.push_back(Emit::Message(json!({
            "jsonrpc": "2.0",
            "method": "notifications/tasks/status",
            "params": task,
        })));
        self.last_status = Some(task);
    }

    /// Sends each input request not sent yet; its id names the task and the request's key.
    #[cfg(feature = "mcp-2025")]
    fn ask(&mut self, snapshot: &TaskSnapshot) {
        for (key, params) in &snapshot.input_requests {
            if !self.asked.insert(key.clone()) {
                continue;
            }
            let mut request = elicitation_request(params.clone());
            if self.follow.outcome == Outcome::TaskResult {
                request["params"]["_meta"] =
                    json!({ META_RELATED_TASK: { "taskId": snapshot.task_id } });
            }
            request["jsonrpc"] = json!("2.0");
            request["id"] = json!(format!("{TASK_REQUEST_PREFIX}{}/{key}", snapshot.task_id));
            self.queued.push_back(Emit::Message(request));
        }
    }

    /// Answers the call with the task's unanswered requests, unless this call just answered
    /// all of them (the task has yet to take the answers in).
    fn hand_back(&mut self, snapshot: &TaskSnapshot) {
        let waiting: Vec<(String, Value)> = snapshot
            .input_requests
            .iter()
            .filter(|(key, _)| !self.asked.contains(key))
            .cloned()
            .collect();
        if waiting.is_empty() {
            return;
        }
        let round = super::inline::input_round(&snapshot.task_id, &waiting);
        self.queued
            .push_back(Emit::Done(Ok(super::dispatch::input_required(round))));
    }

    /// Cancels a task whose input the client cannot give, and answers saying why.
    async fn refuse(&mut self, (refusal, tool): (Refusal, String)) {
        let follow = &self.follow;
        // The task would wait for an answer that cannot come; a failed cancel changes nothing
        // the client is told.
        let _ = follow
            .tasks
            .cancel(&follow.task_id, follow.principal.as_deref())
            .await;
        let outcome = match refusal {
            Refusal::MissingTasksExtension => Err(RpcError::tasks_required(&format!(
                "the tool {tool:?} asked for input, which"
            ))),
            #[cfg(feature = "mcp-2025")]
            Refusal::ToolError => Ok(json!({
                "content": [{
                    "type": "text",
                    "text": format!(
                        "the tool {tool:?} needs input from the user, and this client did not \
                         declare the elicitation capability; call it from a client that \
                         supports elicitation or MCP tasks"
                    ),
                }],
                "isError": true,
            })),
        };
        self.queued.clear();
        self.queued.push_back(Emit::Done(outcome));
    }

    /// The answer of an inline run past its deadline: the task goes on, and the client is
    /// told how to follow it.
    fn still_running(&self) -> Result<Value, RpcError> {
        let task_id = &self.follow.task_id;
        let after = crate::core::format_duration(self.waited);
        #[cfg(feature = "mcp-2025")]
        if self.follow.outcome == Outcome::Legacy {
            return Ok(json!({
                "content": [{
                    "type": "text",
                    "text": format!(
                        "the task {task_id} is still running after {after}, and goes on; \
                         call the tool as a task (the `task` parameter of MCP tasks) to \
                         follow long runs, or ask later with tasks/get"
                    ),
                }],
                "isError": true,
            }));
        }
        let mut error = RpcError::tasks_required(&format!(
            "the task {task_id} is still running after {after} (it goes on); \
             waiting for it longer"
        ));
        error.error.data.get_or_insert_with(|| json!({}))["taskId"] = json!(task_id);
        Err(error)
    }

    fn outcome_of(&self, snapshot: TaskSnapshot) -> Result<Value, RpcError> {
        let task_id = snapshot.task_id.clone();
        let result = match snapshot.status {
            TaskStatus::Completed => snapshot.result.unwrap_or(Value::Null),
            TaskStatus::Failed => {
                let error = snapshot.error.map_or_else(
                    || ErrorObject::new(code::INTERNAL_ERROR, "the task failed"),
                    |failure| ErrorObject::new(failure.code, failure.message),
                );
                return Err(RpcError::with_status(200, error));
            }
            _ => {
                let error = ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!("the task {task_id} was cancelled"),
                );
                return Err(RpcError::with_status(200, error));
            }
        };
        Ok(match self.follow.outcome {
            Outcome::Modern => crate::wire::tasks::complete_result(result),
            #[cfg(feature = "mcp-2025")]
            Outcome::Legacy => crate::wire::legacy::call_result(result),
            #[cfg(feature = "mcp-2025")]
            Outcome::TaskResult => {
                let mut result = crate::wire::legacy::call_result(result);
                result["_meta"][META_RELATED_TASK] = json!({ "taskId": task_id });
                result
            }
        })
    }
}

/// How a follower learns of the task's changes.
enum Watch {
    /// It has not asked yet.
    NotYet,
    /// Each change as it commits.
    Changes(TaskChanges),
    /// The route cannot watch, or the watch broke: it reads the task after each pause.
    Unavailable,
}

/// The task and input key a client's response answers, if its id is one a follower sent.
pub(crate) fn answer_id(id: &str) -> Option<(&str, &str)> {
    id.strip_prefix(TASK_REQUEST_PREFIX)?.split_once('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_ids_name_the_task_and_key() {
        assert_eq!(answer_id("task/ab12/approval"), Some(("ab12", "approval")));
        assert_eq!(answer_id("task/ab12/a/b"), Some(("ab12", "a/b")));
        assert_eq!(answer_id("call/x"), None);
    }
}
