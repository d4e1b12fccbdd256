//! The journal: the rows a task's body leaves behind, and the writes that change them.
//!
//! Steps (`do`, `sleep`, `check`) and input requests (elicitations and offers) live in two
//! tables but share one key namespace per task: a key recorded under one kind and requested
//! under another is a non-determinism error. Every row carries a per-task sequence number so
//! that "the latest" is never decided by comparing clock readings.

use std::collections::BTreeMap;
use std::fmt;

use super::own_keys::{OwnKey, is_cleanup_key};
use super::task::{TaskRecord, TaskStatus};
use super::time::Timestamp;

/// What a journal key was recorded as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// A journaled closure (`step`).
    Do,
    /// A durable timer (`sleep`, `sleep_until`).
    Sleep,
    /// A journaled read of a standing offer (`check_input`).
    Check,
    /// A blocking input request (`elicit`).
    Elicit,
    /// A standing, non-blocking input request (`offer`).
    Offer,
    /// A value the context recorded for the body: a clock reading (`now`), the seed of its
    /// random draws, or which side of a patch gate it took (`patched`). Stored under keys
    /// starting with `$`, which step names cannot.
    Value,
    /// A child task the body started (`start_child`): pending while the child runs, then
    /// completed or failed with the child's outcome.
    Child,
}

impl StepKind {
    /// The storage name.
    pub const fn as_str(self) -> &'static str {
        match self {
            StepKind::Do => "do",
            StepKind::Sleep => "sleep",
            StepKind::Check => "check",
            StepKind::Elicit => "elicit",
            StepKind::Offer => "offer",
            StepKind::Value => "value",
            StepKind::Child => "child",
        }
    }

    /// The kind named `name` among the `steps` table's kinds.
    pub fn parse_step(name: &str) -> Option<Self> {
        [
            StepKind::Do,
            StepKind::Sleep,
            StepKind::Check,
            StepKind::Value,
            StepKind::Child,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a step row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepStatus {
    /// Not finished: a retry or a sleep is pending.
    Pending,
    /// Finished with a value.
    Completed,
    /// Finished with an error that will be returned on every replay.
    Failed,
}

impl StepStatus {
    /// The storage name.
    pub const fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::Completed => "completed",
            StepStatus::Failed => "failed",
        }
    }

    /// The status named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [
            StepStatus::Pending,
            StepStatus::Completed,
            StepStatus::Failed,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }
}

/// One row of the `steps` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepRow {
    /// The journal key: the step's name plus `#n` for its n-th occurrence in a run (n > 1).
    pub key: String,
    /// `Do`, `Sleep`, `Check` or `Value`.
    pub kind: StepKind,
    /// Where the step is.
    pub status: StepStatus,
    /// The value (completed) or the failure (failed), as JSON text.
    pub result: Option<String>,
    /// The number of the last attempt that ran (`do` steps).
    pub attempt: u32,
    /// When the next attempt of a failed `do` may run.
    pub next_attempt_at: Option<Timestamp>,
    /// When a sleep ends.
    pub wake_at: Option<Timestamp>,
    /// The last attempt's error message, kept while retries go on.
    pub last_error: Option<String>,
    /// The per-task sequence number of the row's creation.
    pub seq: u64,
    /// When the row was created.
    pub created_at: Timestamp,
    /// When the row finished.
    pub completed_at: Option<Timestamp>,
}

/// One row of the `input_requests` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputRow {
    /// The key the client answers under.
    pub key: String,
    /// The request shown to the client, as JSON text.
    pub request: String,
    /// The first answer, as JSON text.
    pub response: Option<String>,
    /// An answer (or a timeout) was recorded.
    pub answered: bool,
    /// When the answer arrived.
    pub answered_at: Option<Timestamp>,
    /// When a timed elicitation gives up waiting.
    pub timeout_at: Option<Timestamp>,
    /// The elicitation timed out without an answer.
    pub timed_out: bool,
    /// An elicitation (`true`) blocks the task; an offer (`false`) does not.
    pub blocking: bool,
    /// An offer's answer was taken by `check_input`.
    pub consumed: bool,
    /// The per-task sequence number of the row's creation.
    pub seq: u64,
    /// When the row was created.
    pub created_at: Timestamp,
}

impl InputRow {
    /// A request just recorded, not answered yet: an elicitation if `blocking`, else an offer.
    pub(crate) fn unanswered(
        key: &str,
        request: String,
        blocking: bool,
        seq: u64,
        now: Timestamp,
    ) -> InputRow {
        InputRow {
            key: key.to_owned(),
            request,
            response: None,
            answered: false,
            answered_at: None,
            timeout_at: None,
            timed_out: false,
            blocking,
            consumed: false,
            seq,
            created_at: now,
        }
    }

    /// The kind the key was recorded as.
    pub fn kind(&self) -> StepKind {
        if self.blocking {
            StepKind::Elicit
        } else {
            StepKind::Offer
        }
    }
}

/// A task with (part of) its journal, as loaded in one read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskState {
    /// The task row.
    pub task: TaskRecord,
    /// Step rows by key (all of them, or only the pending ones for a control load).
    pub steps: BTreeMap<String, StepRow>,
    /// Input request rows by key (always all of them).
    pub inputs: BTreeMap<String, InputRow>,
}

/// How much of the journal a read brings back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadScope {
    /// The task, every input request and every step (an activation replays from this).
    Full,
    /// The task, every input request and only pending steps: all that scheduling, polling,
    /// answering and cancelling need, without reading completed history.
    Control,
}

impl LoadScope {
    /// Whether a step row belongs in a load of this scope.
    pub fn includes(self, step: &StepRow) -> bool {
        self == LoadScope::Full || step.status == StepStatus::Pending
    }
}

/// One change to a task's rows. A store applies a list of them atomically.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "a few writes per batch, moved once into the store; boxing the task row buys nothing"
)]
pub enum Write {
    /// Replace the task row: every column but `task_id`, `version` (the guard's), and
    /// `list_scope` and `code_version` (fixed at creation).
    PutTask(TaskRecord),
    /// Insert or replace a step row.
    PutStep(StepRow),
    /// Insert or replace an input request row.
    PutInput(InputRow),
    /// Publish a status message (and a meta object, unless `None`) as the `published`-th of the
    /// run.
    PublishStatus {
        /// The message.
        message: String,
        /// The meta object as JSON text; `None` keeps the previous one.
        meta: Option<String>,
        /// The ordinal of this `status` call in the run.
        published: u32,
        /// When.
        at: Timestamp,
    },
    /// Move a working task to `input_required` (an elicitation was recorded).
    AwaitInput {
        /// When.
        at: Timestamp,
    },
    /// Clear the flag that cuts the next sleep (the sleep it was for has been cut).
    ClearSleepCut,
}

impl Write {
    /// Whether the write changes the task row (and so its `version`). Step and input rows
    /// alone do not: control-plane decisions never depend on a concurrent activation's rows in
    /// a way a version check would protect (answers and consumption touch disjoint rows, and a
    /// sleep cut is carried by the task row's flag).
    pub fn changes_task(&self) -> bool {
        !matches!(self, Write::PutStep(_) | Write::PutInput(_))
    }

    /// The task's cancel flag once `writes` commit, given the flag the guard read: the last
    /// task-row write sets it, other writes leave it (what a SQL store reports in
    /// [`Applied::Done`]).
    pub fn cancel_flag_after(writes: &[Write], read: bool) -> bool {
        writes
            .iter()
            .rev()
            .find_map(|write| match write {
                Write::PutTask(task) => Some(task.cancel_requested),
                _ => None,
            })
            .unwrap_or(read)
    }
}

/// Which task row a list of writes expects to find.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Guard {
    /// The row's `version` must still be this (control-plane writes: optimistic concurrency).
    pub version: Option<u64>,
    /// The row's `generation` must still be this (every write of an activation).
    pub generation: Option<u64>,
}

impl Guard {
    /// Whether `task` satisfies the guard.
    pub fn admits(&self, task: &TaskRecord) -> bool {
        self.admits_columns(task.version, task.generation)
    }

    /// Whether a task row with this `version` and `generation` satisfies the guard.
    pub fn admits_columns(&self, version: u64, generation: u64) -> bool {
        self.version.is_none_or(|v| v == version) && self.generation.is_none_or(|g| g == generation)
    }
}

/// What a store reports after applying guarded writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The writes are committed; `cancel_requested` is the task's flag as of the commit.
    Done {
        /// Whether a cancellation is waiting to be observed.
        cancel_requested: bool,
    },
    /// The guard did not match (or the task is gone); nothing was written.
    Stale,
}

impl TaskState {
    /// Applies one write to the in-memory state, exactly as a store applies it to its rows.
    ///
    /// The in-memory store is built on this, and the driver keeps its own view current with it.
    pub fn apply(&mut self, write: &Write) {
        match write {
            Write::PutTask(record) => {
                let version = self.task.version;
                let list_scope = self.task.list_scope.take();
                let code_version = self.task.code_version.take();
                self.task = record.clone();
                self.task.version = version;
                self.task.list_scope = list_scope;
                self.task.code_version = code_version;
            }
            Write::PutStep(row) => {
                self.steps.insert(row.key.clone(), row.clone());
            }
            Write::PutInput(row) => {
                self.inputs.insert(row.key.clone(), row.clone());
            }
            Write::PublishStatus {
                message,
                meta,
                published,
                at,
            } => {
                let task = &mut self.task;
                task.status_message = Some(message.clone());
                if let Some(meta) = meta {
                    task.status_meta = Some(meta.clone());
                }
                task.status_published = *published;
                task.last_updated_at = *at;
            }
            Write::AwaitInput { at } => {
                if self.task.status == TaskStatus::Working {
                    self.task.status = TaskStatus::InputRequired;
                    self.task.last_updated_at = *at;
                }
            }
            Write::ClearSleepCut => self.task.cut_next_sleep = false,
        }
    }

    /// Checks `guard`, and if it admits the task applies `writes`, bumping the version once if
    /// any of them changes the task row.
    pub fn apply_guarded(&mut self, guard: Guard, writes: &[Write]) -> Applied {
        if !guard.admits(&self.task) {
            return Applied::Stale;
        }
        for write in writes {
            self.apply(write);
        }
        if writes.iter().any(Write::changes_task) {
            self.task.version += 1;
        }
        Applied::Done {
            cancel_requested: self.task.cancel_requested,
        }
    }

    /// A copy holding only what a load of `scope` returns.
    pub fn scoped(&self, scope: LoadScope) -> TaskState {
        TaskState {
            task: self.task.clone(),
            steps: self
                .steps
                .iter()
                .filter(|(_, step)| scope.includes(step))
                .map(|(key, step)| (key.clone(), step.clone()))
                .collect(),
            inputs: self.inputs.clone(),
        }
    }

    /// The compensations registered and not run yet (or still retrying): pending `do` rows
    /// under keys starting with `$cleanup:`. Pending rows are in every load scope.
    pub fn pending_cleanup(&self) -> impl Iterator<Item = &StepRow> {
        self.steps.values().filter(|row| {
            is_cleanup_key(&row.key)
                && row.kind == StepKind::Do
                && row.status == StepStatus::Pending
        })
    }

    /// The child tasks started, not ended (as far as this task knows) and not yet asked to
    /// stop: pending `child` rows without a `$stopped:` record. A cancel of the task cancels
    /// them before it settles.
    pub fn pending_children(&self) -> impl Iterator<Item = &StepRow> {
        self.steps.values().filter(|row| {
            row.kind == StepKind::Child
                && row.status == StepStatus::Pending
                && !self.steps.contains_key(&OwnKey::Stopped(&row.key).key())
        })
    }

    /// Whether a cancel of the task has work to do before it settles: compensations to run or
    /// children to cancel.
    pub fn has_cleanup(&self) -> bool {
        self.pending_cleanup().next().is_some() || self.pending_children().next().is_some()
    }

    /// When a cancelled task's cleanup must be over, once it has begun.
    pub fn cleanup_deadline(&self) -> Option<Timestamp> {
        self.steps
            .get(&OwnKey::CleanupDeadline.key())
            .filter(|row| row.kind == StepKind::Value)
            .and_then(|row| row.wake_at)
    }

    /// The kind a journal key was recorded as, in either table.
    pub fn recorded_kind(&self, key: &str) -> Option<StepKind> {
        self.steps
            .get(key)
            .map(|step| step.kind)
            .or_else(|| self.inputs.get(key).map(InputRow::kind))
    }

    /// The next free sequence number.
    pub fn next_seq(&self) -> u64 {
        let steps = self.steps.values().map(|s| s.seq);
        let inputs = self.inputs.values().map(|i| i.seq);
        steps.chain(inputs).max().map_or(1, |max| max + 1)
    }
}
