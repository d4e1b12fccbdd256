//! The task record and its status machine.

use std::fmt;
use std::time::Duration;

use super::schedule::RunCause;
use super::time::Timestamp;

/// Where a task is in its life.
///
/// `Working` and `InputRequired` alternate while the task lives; `Completed`, `Failed` and
/// `Cancelled` are terminal and never change again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The body is running or will run at its next wake.
    Working,
    /// The body waits for an answer to an elicitation.
    InputRequired,
    /// The body returned (a tool error is a completed task whose result has `isError`).
    Completed,
    /// The engine could not finish the task (expiry, a value it cannot store, non-determinism).
    Failed,
    /// The task was cancelled and the cancellation was observed.
    Cancelled,
}

impl TaskStatus {
    /// Every status, in the order of the wire's enumeration.
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// The wire and storage name (`"working"`, `"input_required"`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// The status named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == name)
    }

    /// Whether the status can never change again.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// Whether the status machine allows moving from `self` to `next`.
    pub fn can_become(self, next: TaskStatus) -> bool {
        !self.is_terminal() || self == next
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the engine failed a task: a JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskFailure {
    /// The JSON-RPC error code (`-32603` for engine failures).
    pub code: i64,
    /// What went wrong, for a person.
    pub message: String,
}

impl TaskFailure {
    /// The JSON-RPC "internal error" code used for every engine failure.
    pub const INTERNAL_ERROR: i64 = -32603;

    /// An engine failure with the internal-error code.
    pub fn internal(message: impl Into<String>) -> Self {
        TaskFailure {
            code: Self::INTERNAL_ERROR,
            message: message.into(),
        }
    }
}

/// Where a child task reports when it ends: its parent and the key the parent started it under.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentLink {
    /// The parent task's id.
    pub task_id: String,
    /// The journal key of the start in the parent's body.
    pub key: String,
    /// The parent has taken the child's outcome; nothing is left to deliver.
    #[serde(default)]
    pub notified: bool,
    /// The root of the parent's tree: the task no other task started (`None` in a link
    /// recorded before roots were; the parent is then the nearest ancestor known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// The one row that describes a task. Values are stored as JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    /// The opaque task id.
    pub task_id: String,
    /// The registered task (tool) whose body runs.
    pub tool_name: String,
    /// The input, as JSON text.
    pub input: String,
    /// The current status.
    pub status: TaskStatus,
    /// The last message the body published.
    pub status_message: Option<String>,
    /// The last meta object the body published, as JSON text.
    pub status_meta: Option<String>,
    /// How many `status` calls of a run have been published; replays skip those below it.
    pub status_published: u32,
    /// When the task was created.
    pub created_at: Timestamp,
    /// When something a poller can see last changed.
    pub last_updated_at: Timestamp,
    /// When the task reached a terminal status.
    pub finished_at: Option<Timestamp>,
    /// How long the task is kept after creation; `None` keeps it forever.
    pub ttl: Option<Duration>,
    /// The poll interval suggested to clients.
    pub poll_interval: Duration,
    /// The result once completed, as JSON text.
    pub result: Option<String>,
    /// The failure once failed.
    pub error: Option<TaskFailure>,
    /// A cancellation was asked for and not yet observed.
    pub cancel_requested: bool,
    /// How many activations have been claimed.
    pub run_attempt: u32,
    /// The lease of the current activation; every write of an activation is guarded by it.
    pub generation: u64,
    /// An explicit request to run the body at this time (creation, an answer, a redelivery).
    pub next_run_at: Option<Timestamp>,
    /// What asked for the run at [`next_run_at`](Self::next_run_at), as the engine names it
    /// (`answer`, `child`, `hand-off`, ...), for the activation's log; a store keeps it as it
    /// keeps the other fields. `None` for a row written before causes were recorded.
    pub run_cause: Option<String>,
    /// An offer was answered while no sleep was pending: the next sleep ends at once.
    pub cut_next_sleep: bool,
    /// The principal the task is bound to; other callers are told it does not exist.
    pub principal: Option<String>,
    /// The listing the task appears in (a key naming its creator, such as
    /// `principal:<p>`); `None`: it is never listed. Fixed at creation.
    pub list_scope: Option<String>,
    /// The code version the task was created under (the server's
    /// [`code_version`](crate::McpServer::code_version), by default its version); `None` for a
    /// task created before versions were recorded. Fixed at creation.
    pub code_version: Option<String>,
    /// The task that started this one as its child, if one did; fixed at creation but for
    /// its `notified` flag.
    pub parent: Option<ParentLink>,
    /// Bumped by every write that changes this row; control-plane writes are guarded by it.
    pub version: u64,
}

impl TaskRecord {
    /// The root of the task's tree: the task that no other started, this one unless it is a
    /// child (for a child recorded before roots were, its nearest ancestor known).
    pub fn root_id(&self) -> &str {
        match &self.parent {
            Some(parent) => parent.root.as_deref().unwrap_or(&parent.task_id),
            None => &self.task_id,
        }
    }

    /// Asks for a run of the body at `at` because of `cause`, unless one is asked for no
    /// later: the earliest request, and its cause, stand.
    pub(crate) fn request_run(&mut self, at: Timestamp, cause: RunCause) {
        if self.next_run_at.is_none_or(|asked| asked > at) {
            self.next_run_at = Some(at);
            self.run_cause = Some(cause.as_str().to_owned());
        }
    }

    /// Runs the body at `at` because of `cause`, whatever was asked before (a claim's
    /// redelivery anchor, a hand-off).
    pub(crate) fn schedule_run(&mut self, at: Timestamp, cause: RunCause) {
        self.next_run_at = Some(at);
        self.run_cause = Some(cause.as_str().to_owned());
    }

    /// No run is asked for any more.
    pub(crate) fn clear_run(&mut self) {
        self.next_run_at = None;
        self.run_cause = None;
    }

    /// When the task's retention ends, if it has one.
    pub fn deadline(&self) -> Option<Timestamp> {
        self.ttl.map(|ttl| self.created_at.saturating_add(ttl))
    }

    /// Whether `caller` may see this task.
    pub fn visible_to(&self, caller: Option<&str>) -> bool {
        match &self.principal {
            None => true,
            Some(owner) => caller == Some(owner.as_str()),
        }
    }

    /// Moves to `next` if the status machine allows it, stamping the time; returns whether it did.
    pub fn transition(&mut self, next: TaskStatus, now: Timestamp) -> bool {
        if !self.status.can_become(next) {
            return false;
        }
        if self.status != next {
            self.status = next;
            self.last_updated_at = now;
            if next.is_terminal() {
                self.finished_at = Some(now);
                self.clear_run();
                self.cancel_requested = false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for status in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(TaskStatus::parse("done"), None);
    }

    #[test]
    fn a_deadline_past_the_latest_time_is_capped() {
        let task = crate::core::control::test_task(Timestamp(1_000), Some(Duration::MAX));
        assert_eq!(task.ttl, Some(crate::core::MAX_DURATION));
        assert_eq!(task.deadline(), Some(Timestamp::MAX));
    }

    #[test]
    fn terminal_statuses_never_change() {
        for from in TaskStatus::ALL {
            for to in TaskStatus::ALL {
                let allowed = from.can_become(to);
                if from.is_terminal() {
                    assert_eq!(allowed, from == to, "{from} -> {to}");
                } else {
                    assert!(allowed, "{from} -> {to}");
                }
            }
        }
    }
}
