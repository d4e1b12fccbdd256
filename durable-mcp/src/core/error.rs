//! The engine's typed errors.

use std::time::Duration;

use super::journal::StepKind;
use super::time::{DurationError, format_duration};

/// A failure of the engine rather than of the user's code.
///
/// Any of these that reaches a running task fails the task (status `failed`, with the message as
/// a JSON-RPC error): the body may see one, but cannot swallow it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The body asked the journal for a key under another kind than the one recorded.
    #[error(
        "non-determinism at journal key {key:?}: it was recorded as `{recorded}` but the body now \
         asks for `{requested}`; a key names one kind of operation, so give each step, sleep and \
         input its own name, and call them in the same order on every replay (branch on step \
         results and on cx.now(), cx.random_u64() or cx.uuid(), never on clocks or randomness \
         read any other way; to change the steps of tasks in flight, gate the change with \
         cx.patched)"
    )]
    Nondeterminism {
        /// The journal key.
        key: String,
        /// What the journal holds.
        recorded: StepKind,
        /// What the body asked for.
        requested: StepKind,
    },
    /// The body, on the code it runs now, did not reach steps, sleeps, inputs or children that
    /// an earlier run of the task recorded: it broke new ground instead, returned, or waited.
    #[error(
        "non-determinism: the body did not reach {} that an earlier run of this task recorded, \
         {instead}; a task in flight replays its journal by name, so a step, sleep, input or \
         child task renamed, removed or moved behind new work would run again or be skipped \
         unnoticed; to change the code of tasks in flight, keep their old path behind \
         cx.patched(..) (see \"Changing a task's code\" in docs/deploying.md), or let them \
         finish on the old code first",
        quoted_keys(keys)
    )]
    UnreachedJournal {
        /// The recorded keys the run did not reach, in the order they were recorded.
        keys: Vec<String>,
        /// What the body did in their place.
        instead: Divergence,
    },
    /// An elicitation recorded with a timeout, which ran out, is now asked without one.
    #[error(
        "non-determinism at journal key {key:?}: the elicitation was recorded with a timeout, \
         which ran out before an answer came, but the body now asks for it without one; a key \
         keeps what it was recorded with, so ask it with `cx.elicit(..).timeout(..)` on every run \
         (and handle `ElicitOutcome::TimedOut`), or give the elicitation without a timeout a \
         name of its own"
    )]
    ElicitTimeoutRemoved {
        /// The elicitation's key.
        key: String,
    },
    /// A journal operation was called on the task's context from inside a step's closure.
    #[error(
        "{inner:?} was called on the task's context inside the closure of step {outer:?}: a \
         step's closure is one attempt of one journaled operation and cannot journal operations \
         of its own; call it from the task body instead (a `#[step]` fn called inside a step \
         simply runs as part of the outer step)"
    )]
    NestedStep {
        /// The key of the step whose closure was running.
        outer: String,
        /// The name of the operation that was called.
        inner: String,
    },
    /// The body asked the client for input in a shape clients cannot show.
    #[error(
        "the request of input {key:?} is not an elicitation clients can show: {reason}; {}",
        super::input::ELICITATION_SHAPES
    )]
    UnusableInputRequest {
        /// The input's key.
        key: String,
        /// What is wrong with the request.
        reason: String,
    },
    /// A value is larger than the limit for stored values.
    #[error("{what} is {size} bytes of JSON, more than the limit of {limit} bytes")]
    ValueTooLarge {
        /// What the value is ("the result of step \"fetch\"").
        what: String,
        /// Its serialised size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A value cannot be stored as JSON and read back.
    #[error("{what} cannot be stored as JSON and read back: {reason}")]
    NotSerialisable {
        /// What the value is.
        what: String,
        /// What serde said.
        reason: String,
    },
    /// A step name, sleep name or input key the journal cannot use.
    #[error(
        "invalid journal name {name:?}: {reason} (names are non-empty, must not contain '#', \
         which marks repeated occurrences, and must not start with '$', which marks what the \
         context records itself)"
    )]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A duration given to a step cannot be used.
    #[error("{what}: {source}")]
    InvalidDuration {
        /// Where it was given.
        what: String,
        /// The parse error.
        source: DurationError,
    },
    /// A retry policy given to a task or step cannot be used.
    #[error("the retry policy of {what} is invalid: {reason}")]
    InvalidPolicy {
        /// Where it was given.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// `check_input` named a key with no standing offer.
    #[error(
        "check_input({key:?}): {reason}; call cx.offer({key:?}, request) before checking for an \
         answer"
    )]
    NoOffer {
        /// The key.
        key: String,
        /// Why it cannot be checked.
        reason: &'static str,
    },
    /// A status meta object is too large or not an object.
    #[error("status meta {reason}")]
    InvalidStatusMeta {
        /// What is wrong.
        reason: String,
    },
    /// A write was refused because a newer activation holds the task.
    #[error("stale lease for task {task_id:?}: a newer activation or a terminal status owns it")]
    StaleLease {
        /// The task.
        task_id: String,
    },
    /// No task with this id (or not one the caller may see).
    #[error("task {task_id:?} not found")]
    NotFound {
        /// The id asked for.
        task_id: String,
    },
    /// No task of this name is registered.
    #[error("no task named {name:?} is registered")]
    UnknownTask {
        /// The name asked for.
        name: String,
    },
    /// A task id was reused for another tool.
    #[error("task {task_id:?} was created for {existing:?}, not {requested:?}")]
    TaskIdConflict {
        /// The id.
        task_id: String,
        /// The tool it was created for.
        existing: String,
        /// The tool asked for now.
        requested: String,
    },
    /// A caller-chosen task id is held by a task another principal (or another listing) created.
    #[error(
        "task id {task_id:?} is taken; leave task ids to the engine, which draws 128 random bits"
    )]
    TaskIdTaken {
        /// The id.
        task_id: String,
    },
    /// The input responses of an update are not an object of objects.
    #[error("input responses must be a JSON object mapping request keys to objects: {reason}")]
    InvalidResponses {
        /// What is wrong.
        reason: String,
    },
    /// A task was still live when its time to live ran out.
    #[error("task expired after {}", format_duration(*ttl))]
    Expired {
        /// The time to live.
        ttl: Duration,
    },
    /// The runtime reported a step attempt the activation is not waiting for: one it never
    /// issued, or one already reported. A bug in the engine, not in the task's code.
    #[error(
        "step attempt {attempt} was reported, but this activation has no such attempt running \
         (it was never issued, or was reported already); this is a bug in durable-mcp, please \
         report it"
    )]
    UnknownAttempt {
        /// The attempt's number within the activation.
        attempt: u64,
    },
    /// A task that took the old side of a patch gate reached the gate after its old side was
    /// retired (`cx.retire_patch`).
    #[error(
        "patch {id:?} is retired, but this task started before the patch and took its old side \
         at the gate; deploy `if cx.patched({id:?}) {{ new }} else {{ old }}` again until no task \
         created before the patch is in flight (tasks/get shows the code version each task was \
         created under)"
    )]
    RetiredPatch {
        /// The patch's id.
        id: String,
    },
    /// A body started a child task on a host that cannot reach other tasks.
    #[error(
        "this host cannot start child tasks: its engine reaches no other task; serve it with \
         Router::new, the native host or the Cloudflare host, which route between tasks"
    )]
    NoTaskRoute,
    /// The store failed.
    #[error("store error: {0}")]
    Store(String),
}

/// What a body did in place of reaching the keys its journal holds (see
/// [`EngineError::UnreachedJournal`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Divergence {
    /// It went on to new ground under this key.
    NewGround(String),
    /// It returned.
    Returned,
    /// It waited, while rows it did not reach still ask for a wake-up (a step's retry, a
    /// sleep's end) that could only run it to the same wait again.
    Waited,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Divergence::NewGround(key) => write!(f, "and went on to new ground at {key:?} instead"),
            Divergence::Returned => f.write_str("and returned without them"),
            Divergence::Waited => f.write_str(
                "and waited instead, while their retries or sleeps still ask for a wake-up that \
                 would only run the body to the same wait",
            ),
        }
    }
}

impl EngineError {
    /// The error for a value that could not be serialised or read back.
    pub fn not_serialisable(what: impl Into<String>, error: &serde_json::Error) -> Self {
        EngineError::NotSerialisable {
            what: what.into(),
            reason: error.to_string(),
        }
    }
}

/// `"a", "b" and 3 more`: the keys of an error message, the first few quoted.
fn quoted_keys(keys: &[String]) -> String {
    const SHOWN: usize = 5;
    let quoted: Vec<String> = keys
        .iter()
        .take(SHOWN)
        .map(|key| format!("{key:?}"))
        .collect();
    let more = keys.len().saturating_sub(SHOWN);
    let noun = if keys.len() == 1 { "key" } else { "keys" };
    match (quoted.split_last(), more) {
        (None, _) => "no key".to_owned(),
        (Some((only, [])), 0) => format!("the {noun} {only}"),
        (Some((last, rest)), 0) => format!("the {noun} {} and {last}", rest.join(", ")),
        (Some(_), more) => format!("the {noun} {} and {more} more", quoted.join(", ")),
    }
}
