//! `subscriptions/listen` (2026-07-28, with the Tasks extension's `taskIds`): one long-lived
//! stream of the notifications a client asked for, pushed as they happen. The acknowledgement
//! comes first, then each followed task as it is now, then one notification per change of a
//! task (from its commits, through [`TaskRoute::watch`]) or of the server's lists (from the
//! host's [`Listeners`]). Every frame carries the subscription's id. The stream ends with a
//! `complete` response when the host stops or every followed task has ended and been told,
//! and without one when the way to a live task broke: the client opens it again and gets the
//! current state.

use std::collections::VecDeque;
use std::rc::Rc;

use futures_util::StreamExt;
use futures_util::stream::{self, LocalBoxStream, SelectAll};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::dispatch::{Call, Reply};
use super::error::RpcError;
use super::follow::{Emit, KEEP_ALIVE_EVERY};
use super::listeners::{Membership, ServerChange};
use crate::core::TaskSnapshot;
use crate::runtime::{TaskChanges, TaskRoute};
use crate::wire::{DetailedTask, RequestId};

/// The `_meta` key naming the stream a notification was sent on.
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How long a client waits before opening the stream again when the host is full.
const FULL_RETRY_AFTER_SECONDS: u64 = 5;

/// The notifications a client asks for (`SubscriptionFilter`); each is opt-in.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Filter {
    #[serde(default)]
    tools_list_changed: bool,
    #[serde(default)]
    prompts_list_changed: bool,
    #[serde(default)]
    resources_list_changed: bool,
    resource_subscriptions: Option<Vec<String>>,
    task_ids: Option<Vec<String>>,
}

/// What this stream agreed to send.
#[derive(Debug, Default)]
struct Honoured {
    tools: bool,
    prompts: bool,
    resources: bool,
    resource_uris: Vec<String>,
    /// Whether the client asked for tasks at all (the acknowledgement then lists them).
    asked_for_tasks: bool,
}

impl Honoured {
    /// Whether the stream has anything to wait for besides its tasks.
    fn follows_the_server(&self) -> bool {
        self.tools || self.prompts || self.resources || !self.resource_uris.is_empty()
    }

    /// Whether `change` is one this stream asked for.
    fn wants(&self, change: &ServerChange) -> bool {
        match change {
            ServerChange::ToolsListChanged => self.tools,
            ServerChange::PromptsListChanged => self.prompts,
            ServerChange::ResourcesListChanged => self.resources,
            ServerChange::ResourceUpdated(uri) => self.resource_uris.contains(uri),
            ServerChange::Closing => false,
        }
    }

    /// The acknowledged subset, as a `SubscriptionFilter`.
    fn acknowledged(&self, task_ids: &[String]) -> Value {
        let mut filter = Map::new();
        for (key, honoured) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if honoured {
                filter.insert(key.to_owned(), json!(true));
            }
        }
        if !self.resource_uris.is_empty() {
            filter.insert(
                "resourceSubscriptions".to_owned(),
                json!(self.resource_uris),
            );
        }
        if self.asked_for_tasks {
            filter.insert("taskIds".to_owned(), json!(task_ids));
        }
        Value::Object(filter)
    }
}

impl Call<'_> {
    /// Opens the stream `subscriptions/listen` request `id` asks for.
    pub(crate) async fn listen(&self, id: &RequestId) -> Result<Reply, RpcError> {
        let filter = self.params.get("notifications").ok_or_else(|| {
            RpcError::invalid_params(
                "Invalid params: subscriptions/listen needs params.notifications, the \
                 notifications to send (for example {\"taskIds\": [\"...\"]})",
            )
        })?;
        let filter = Filter::deserialize(filter).map_err(|error| {
            RpcError::invalid_params(format!("Invalid params: params.notifications: {error}"))
        })?;
        if filter.task_ids.is_some() && !self.meta.client_capabilities.supports_tasks() {
            return Err(RpcError::tasks_required("taskIds in subscriptions/listen"));
        }
        let limits = self.listeners.limits();
        let mut task_ids = filter.task_ids.clone().unwrap_or_default();
        dedupe(&mut task_ids);
        if task_ids.len() > limits.max_task_ids {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: this server follows at most {} taskIds on one \
                 subscriptions/listen stream, and this one asks for {}; open another stream \
                 for the rest",
                limits.max_task_ids,
                task_ids.len()
            )));
        }
        let membership = self.listeners.join().ok_or_else(|| {
            RpcError::unavailable(
                format!(
                    "the server holds its limit of {} open subscriptions/listen streams (or \
                     is stopping); close a stream or try again in {FULL_RETRY_AFTER_SECONDS} s, \
                     and meanwhile poll tasks/get",
                    limits.max_streams
                ),
                FULL_RETRY_AFTER_SECONDS,
            )
        })?;
        let honoured = self.honoured(&filter);
        let mut followed = Vec::new();
        for task_id in &task_ids {
            if let Some(task) = self.follow(task_id).await {
                followed.push(task);
            }
        }
        let acknowledged: Vec<String> = followed.iter().map(|t| t.task_id.clone()).collect();
        let subscription = serde_json::to_value(id).unwrap_or_default();
        let ack = notification(
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": honoured.acknowledged(&acknowledged) }),
            &subscription,
        );
        let stream = ListenStream::new(
            subscription,
            honoured,
            followed,
            membership,
            Rc::clone(self.tasks),
        );
        Ok(Reply::Stream(stream.into_emits(ack)))
    }

    /// What of `filter` this server can send.
    fn honoured(&self, filter: &Filter) -> Honoured {
        let has_resources = !self.server.resources.is_empty();
        let mut resource_uris = match (&filter.resource_subscriptions, has_resources) {
            (Some(uris), true) => uris.clone(),
            _ => Vec::new(),
        };
        dedupe(&mut resource_uris);
        Honoured {
            tools: filter.tools_list_changed,
            prompts: filter.prompts_list_changed && !self.server.prompts.is_empty(),
            resources: filter.resources_list_changed && has_resources,
            resource_uris,
            asked_for_tasks: filter.task_ids.is_some(),
        }
    }

    /// The task to follow, if the caller may `tasks/get` it; else `None`, and it is left out
    /// of the acknowledgement whatever the reason, so that a stream does not tell whether a
    /// task it may not see exists.
    async fn follow(&self, task_id: &str) -> Option<Followed> {
        let mut changes = self
            .tasks
            .watch(task_id, self.principal.as_deref())
            .await
            .ok()?;
        let first = changes.next().await?;
        (self.server)
            .check_scopes(self.granted.as_deref(), &first.tool_name)
            .ok()?;
        Some(Followed {
            task_id: task_id.to_owned(),
            first: Some(first),
            changes: Some(changes),
            last: LastSent::default(),
            ended: false,
        })
    }
}

/// Keeps the first of each repeated value, in order.
fn dedupe(values: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    values.retain(|value| seen.insert(value.clone()));
}

/// A notification on the stream, tagged with its id.
fn notification(method: &str, mut params: Value, subscription: &Value) -> Value {
    let meta = params
        .as_object_mut()
        .map(|params| params.entry("_meta").or_insert_with(|| json!({})));
    if let Some(Value::Object(meta)) = meta {
        meta.insert(META_SUBSCRIPTION_ID.to_owned(), subscription.clone());
    }
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// What was last sent of a task: a watch may repeat a snapshot (a write that changed nothing
/// a client sees), and a client is told only what changed.
#[derive(Debug, Default)]
pub(crate) struct LastSent(Option<Value>);

impl LastSent {
    /// The task as `tasks/get` shows `snapshot`, unless it tells nothing new since the last
    /// one (its `lastUpdatedAt` aside).
    pub(crate) fn news(&mut self, snapshot: &TaskSnapshot) -> Option<Value> {
        let task = serde_json::to_value(DetailedTask::of(snapshot)).ok()?;
        let mut seen = task.clone();
        if let Some(seen) = seen.as_object_mut() {
            seen.remove("lastUpdatedAt");
        }
        if self.0.as_ref() == Some(&seen) {
            return None;
        }
        self.0 = Some(seen);
        Some(task)
    }
}

/// One task a stream follows.
struct Followed {
    task_id: String,
    /// The task as the watch began, not sent yet.
    first: Option<TaskSnapshot>,
    /// Its changes, until the stream merges them.
    changes: Option<TaskChanges>,
    last: LastSent,
    /// Whether an ended state (completed, failed, cancelled) was sent.
    ended: bool,
}

impl Followed {
    /// The `notifications/tasks` params for `snapshot`, unless they tell nothing new.
    fn news(&mut self, snapshot: &TaskSnapshot) -> Option<Value> {
        let task = self.last.news(snapshot)?;
        self.ended = snapshot.status.is_terminal();
        Some(task)
    }
}

/// What the stream waits on.
enum Event {
    Server(ServerChange),
    /// A change of followed task `n`, or `None` once its changes end.
    Task(usize, Option<Box<TaskSnapshot>>),
    KeepAlive,
}

struct ListenStream {
    subscription: Value,
    honoured: Honoured,
    followed: Vec<Followed>,
    events: SelectAll<LocalBoxStream<'static, Event>>,
    queued: VecDeque<Emit>,
    finished: bool,
}

impl ListenStream {
    fn new(
        subscription: Value,
        honoured: Honoured,
        mut followed: Vec<Followed>,
        membership: Membership,
        tasks: Rc<dyn TaskRoute>,
    ) -> Self {
        let mut events: SelectAll<LocalBoxStream<'static, Event>> = SelectAll::new();
        // The membership lives as long as the stream: dropping it frees the host's place.
        events.push(Box::pin(stream::unfold(
            membership,
            |mut membership| async {
                let change = membership.changes.next().await?;
                Some((Event::Server(change), membership))
            },
        )));
        events.push(Box::pin(stream::unfold(tasks, |tasks| async move {
            tasks.pause(KEEP_ALIVE_EVERY).await;
            Some((Event::KeepAlive, tasks))
        })));
        for (n, task) in followed.iter_mut().enumerate() {
            if let Some(changes) = task.changes.take() {
                let ended = stream::once(std::future::ready(Event::Task(n, None)));
                events.push(Box::pin(
                    changes
                        .map(move |snapshot| Event::Task(n, Some(Box::new(snapshot))))
                        .chain(ended),
                ));
            }
        }
        ListenStream {
            subscription,
            honoured,
            followed,
            events,
            queued: VecDeque::new(),
            finished: false,
        }
    }

    /// The acknowledgement, each followed task as it is, then what happens.
    fn into_emits(mut self, ack: Value) -> LocalBoxStream<'static, Emit> {
        self.queued.push_back(Emit::Message(ack));
        for n in 0..self.followed.len() {
            if let Some(first) = self.followed[n].first.take() {
                self.task_changed(n, &first);
            }
        }
        self.end_if_done();
        Box::pin(stream::unfold(self, |mut listen| async move {
            let emit = listen.next().await?;
            Some((emit, listen))
        }))
    }

    async fn next(&mut self) -> Option<Emit> {
        loop {
            if let Some(emit) = self.queued.pop_front() {
                self.finished |= matches!(emit, Emit::Done(_));
                return Some(emit);
            }
            if self.finished {
                return None;
            }
            match self.events.next().await? {
                Event::KeepAlive => return Some(Emit::KeepAlive),
                Event::Server(ServerChange::Closing) => self.complete(),
                Event::Server(change) => {
                    if self.honoured.wants(&change)
                        && let Some((method, params)) = server_notification(change)
                    {
                        let message = notification(method, params, &self.subscription);
                        self.queued.push_back(Emit::Message(message));
                    }
                }
                Event::Task(n, Some(snapshot)) => {
                    self.task_changed(n, &snapshot);
                    self.end_if_done();
                }
                // The way to a task that has not ended broke: end without a response, so
                // that the client opens the stream again and reads the task as it is then.
                Event::Task(n, None) if !self.followed[n].ended => return None,
                Event::Task(_, None) => {}
            }
        }
    }

    fn task_changed(&mut self, n: usize, snapshot: &TaskSnapshot) {
        if let Some(task) = self.followed[n].news(snapshot) {
            let message = notification("notifications/tasks", task, &self.subscription);
            self.queued.push_back(Emit::Message(message));
        }
    }

    /// Ends the stream once every followed task has ended and been told, unless it follows
    /// the server's lists too.
    fn end_if_done(&mut self) {
        let all_ended = self.followed.iter().all(|task| task.ended);
        if all_ended && !self.honoured.follows_the_server() {
            self.complete();
        }
    }

    /// Queues the `complete` response that ends the stream gracefully.
    fn complete(&mut self) {
        if self.queued.iter().any(|emit| matches!(emit, Emit::Done(_))) {
            return;
        }
        let meta = json!({ META_SUBSCRIPTION_ID: self.subscription });
        self.queued.push_back(Emit::Done(Ok(
            json!({ "resultType": "complete", "_meta": meta }),
        )));
    }
}

/// The notification announcing `change` (none for the host stopping, which ends the stream).
fn server_notification(change: ServerChange) -> Option<(&'static str, Value)> {
    Some(match change {
        ServerChange::ToolsListChanged => ("notifications/tools/list_changed", json!({})),
        ServerChange::PromptsListChanged => ("notifications/prompts/list_changed", json!({})),
        ServerChange::ResourcesListChanged => ("notifications/resources/list_changed", json!({})),
        ServerChange::ResourceUpdated(uri) => {
            ("notifications/resources/updated", json!({ "uri": uri }))
        }
        ServerChange::Closing => return None,
    })
}
