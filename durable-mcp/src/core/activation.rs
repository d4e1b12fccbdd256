//! One activation of a task body as a sans-io state machine.
//!
//! An [`Activation`] owns everything a replay decides with: the journal as this activation
//! has changed it, the task's step defaults and the limits on stored values, the occurrence
//! count of every name, the next sequence number, the cancel flag the store last reported, the
//! count of `status` calls, the step attempts it issued and has not heard back from, and the
//! reason the run stops. Each call of the body's API (`step`, `sleep`, `elicit`, ...) is one
//! method that returns a decision *and* updates the machine: the writes it decides are applied
//! to its own journal at once and queued for the store ([`take_writes`]), so no later decision
//! reads a view that misses them. The runtime's `TaskContext` is a thin async shell: it
//! serialises what the body gives, asks, sends the queued writes to the store, reports how that
//! went ([`committed`]), runs the step attempts it is given, and returns to the body or parks
//! it.
//!
//! Each decision reads the journal under the operation's key: a hit returns what was recorded
//! (a key recorded under another kind is non-determinism); a miss is new ground, where a
//! waiting cancellation is observed and the operation is recorded.
//!
//! A decision of [`Stop`] means the body must not go on past this point: the machine has
//! recorded why ([`Suspension`]). The activation ends when the body pauses with a reason
//! recorded and no step attempt running ([`end`]). In a concurrent body, a branch that waits
//! (a sleep, a retry backoff, an unanswered elicitation) stops only itself: the other branches
//! go on until the body pauses, and the attempts they started finish and are recorded; if any
//! attempt recorded a result after the wait, the body runs again at once ([`End::rerun`]). A
//! hand-off starts no new attempt, and any other reason ends the activation at once.
//!
//! [`take_writes`]: Activation::take_writes
//! [`committed`]: Activation::committed
//! [`end`]: Activation::end
//! [`End::rerun`]: crate::core::outcome::End::rerun

mod attempts;
mod children;
mod cleanup;
pub mod draws;
mod input;
mod names;
pub use names::NameUse;
mod reach;
mod recorded;
mod rows;
mod settle;
mod sleeps;
mod status;
mod steps;
#[cfg(test)]
mod tests;
mod values;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use attempts::Attempts;
pub use attempts::{Attempt, AttemptId};
pub use children::ChildStart;

use super::error::EngineError;
use super::journal::{Guard, StepKind, StepRow, TaskState, Write};
use super::limits::Limits;
use super::outcome::Suspension;
use super::own_keys::is_own_key;
use super::retry::RetryPolicy;
use super::step_failure::StepFailure;
use super::time::Timestamp;

/// The decision that the body stops here: its future stays pending and is dropped when the
/// activation ends. The machine has recorded why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop;

/// A decision of the machine: go on with a `T`, or stop.
pub type Decision<T> = Result<T, Stop>;

/// A value the body handed over, as the runtime serialised it (or why it could not).
pub type Serialised = Result<serde_json::Value, serde_json::Error>;

/// What an activation decides with besides the journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The task's retry policy, for steps that set none of their own.
    pub retry: RetryPolicy,
    /// How long a step attempt may run, for steps that set no timeout of their own.
    pub step_timeout: Duration,
    /// The limits on stored values.
    pub limits: Limits,
    /// When no new step attempt may start any more (a host's wall-clock limit), if ever.
    pub hand_off_at: Option<Timestamp>,
}

/// What a `step` does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepNext {
    /// Recorded: return this value (JSON text); the closure does not run.
    Replay(String),
    /// Recorded as failed: return this failure again.
    Failed(StepFailure),
    /// Run the closure once as this attempt, then report it with
    /// [`Activation::attempt_done`] (or [`Activation::attempt_abandoned`]).
    Run(Attempt),
}

/// How one attempt of a step's closure ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// It returned a value, already serialised and checked.
    Value(String),
    /// It failed.
    Error {
        /// What went wrong.
        message: String,
        /// Whether the policy may try again.
        retryable: bool,
        /// Whether it failed by outlasting the step's timeout.
        timed_out: bool,
    },
}

/// How a step ends after an attempt that did not ask for a retry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepEnd {
    /// Return the attempt's value.
    Completed,
    /// The step failed for good.
    Failed(StepFailure),
}

/// How an `elicit` that goes on ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElicitNext {
    /// Answered: return this response (JSON text).
    Answered(String),
    /// The deadline passed first (only an elicitation asked with a timeout ends so).
    TimedOut,
}

/// What a `check_input` does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckNext {
    /// Recorded: return what the check saw then (JSON text, `None` for no answer).
    Seen(Option<String>),
    /// New ground: read the offer fresh and record it with [`Activation::record_check`].
    Read,
}

/// One activation of a task body: the replay state and every decision made on it.
#[derive(Debug)]
pub struct Activation {
    journal: TaskState,
    settings: Settings,
    cancel_requested: bool,
    /// Whether the cancellation was recorded before this activation claimed the task.
    cancel_at_claim: bool,
    occurrences: HashMap<String, names::Occurrences>,
    status_calls: u32,
    next_seq: u64,
    suspension: Option<Suspension>,
    attempts: Attempts,
    rerun: bool,
    closures: Vec<String>,
    outbox: Vec<Write>,
    /// The journal keys this run has reached (claimed, or asked for), recorded or not: a
    /// recorded key outside it is ground an earlier run broke further on (what
    /// [`patched`](Self::patched) decides with).
    reached: HashSet<String>,
    /// How many keys of the loaded journal (the body's own, not the context's `$` keys) this
    /// run has not reached yet.
    unreached: usize,
    /// The first new ground this run asked to break while recorded keys were unreached: it
    /// waits for [`judge_deferred_ground`](Self::judge_deferred_ground).
    deferred_ground: Option<String>,
    /// How many random draws this run made, in call order.
    draws: u64,
    /// After a cancel, when the compensations this run registered must be over: set while
    /// they run (see [`begin_cleanup`](Self::begin_cleanup)).
    cleanup_until: Option<Timestamp>,
}

impl Activation {
    /// An activation replaying `journal` (loaded in full after the claim) under `settings`.
    pub fn new(journal: TaskState, settings: Settings) -> Self {
        let unreached = body_rows(&journal).count();
        Activation {
            cancel_requested: journal.task.cancel_requested,
            cancel_at_claim: journal.task.cancel_requested,
            next_seq: journal.next_seq(),
            journal,
            settings,
            occurrences: HashMap::new(),
            status_calls: 0,
            suspension: None,
            attempts: Attempts::default(),
            rerun: false,
            closures: Vec::new(),
            outbox: Vec::new(),
            reached: HashSet::new(),
            unreached,
            deferred_ground: None,
            draws: 0,
            cleanup_until: None,
        }
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.journal.task.task_id
    }

    /// The limits on stored values.
    pub fn limits(&self) -> &Limits {
        &self.settings.limits
    }

    /// The guard of every write of this activation: its lease's generation.
    pub fn guard(&self) -> Guard {
        Guard {
            version: None,
            generation: Some(self.journal.task.generation),
        }
    }

    /// The journal as this activation has changed it.
    #[cfg(test)]
    pub fn journal(&self) -> &TaskState {
        &self.journal
    }

    // ---- stopping, which every section does ----

    /// Fails the task with `error`.
    pub fn fail(&mut self, error: EngineError) -> Stop {
        self.suspend(Suspension::Fail(error))
    }

    /// Stops the body (or, in a concurrent body, one branch of it) for `why`. Of several
    /// reasons the weightiest stands (a failure over a wait, a lost lease over everything);
    /// of equal ones, the first.
    pub fn suspend(&mut self, why: Suspension) -> Stop {
        // With a cancellation waiting, nothing is waited for any more: the body stops for
        // the cancel (and its cleanup runs) instead.
        let why = match why {
            Suspension::Wait if self.cancel_requested && self.cleanup_until.is_none() => {
                Suspension::Cancelled
            }
            other => other,
        };
        if self
            .suspension
            .as_ref()
            .is_none_or(|current| why.weight() > current.weight())
        {
            self.suspension = Some(why);
        }
        Stop
    }

    // ---- internals ----

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// The step row under `key`, if one is recorded, and recorded as `kind`.
    fn recorded_step(&mut self, key: &str, kind: StepKind) -> Decision<Option<&StepRow>> {
        self.check_kind(key, kind)?;
        Ok(self.journal.steps.get(key))
    }

    /// A key names one kind of operation: one recorded as another is non-determinism. The
    /// key counts as reached by this run either way.
    fn check_kind(&mut self, key: &str, requested: StepKind) -> Decision<()> {
        self.reach(key);
        match self.journal.recorded_kind(key) {
            Some(recorded) if recorded != requested => {
                let key = key.to_owned();
                let error = EngineError::Nondeterminism {
                    key,
                    recorded,
                    requested,
                };
                Err(self.fail(error))
            }
            _ => Ok(()),
        }
    }

    /// Marks `key` reached by this run.
    fn reach(&mut self, key: &str) {
        if self.reached.contains(key) {
            return;
        }
        // A key is reached before this run records anything under it, so a row under it now
        // is one the journal was loaded with.
        if !is_own_key(key) && self.journal.recorded_kind(key).is_some() {
            self.unreached -= 1;
        }
        self.reached.insert(key.to_owned());
    }

    /// New ground is where a waiting cancellation is observed; recorded ground replays whatever
    /// the flag says.
    fn observe_cancel(&mut self) -> Decision<()> {
        // The cleanup runs after the cancel was observed, on ground of its own.
        if self.cancel_requested && self.cleanup_until.is_none() {
            return Err(self.suspend(Suspension::Cancelled));
        }
        Ok(())
    }

    /// Whether the operation at hand may break new ground: not with a cancellation waiting,
    /// nor once the body is stopping for any reason but a wait.
    fn break_ground(&mut self) -> Decision<()> {
        self.observe_cancel()?;
        self.new_ground()
    }

    /// Whether new ground may be broken: while one branch of the body waits, the others go
    /// on until the body pauses; after a hand-off or any other reason nothing new is recorded
    /// (recorded ground that needs no write is still replayed, and attempts already running
    /// finish).
    fn new_ground(&mut self) -> Decision<()> {
        match &self.suspension {
            Some(why) if !why.lets_branches_go_on() => Err(Stop),
            _ => Ok(()),
        }
    }

    fn check_name(&mut self, name: &str) -> Decision<()> {
        validate_name(name).map_err(|error| self.fail(error))
    }

    fn refuse_nested(&mut self, inner: &str) -> Decision<()> {
        match self.closures.last() {
            Some(outer) => {
                let error = EngineError::NestedStep {
                    outer: outer.clone(),
                    inner: inner.to_owned(),
                };
                Err(self.fail(error))
            }
            None => Ok(()),
        }
    }

    /// Queues writes for the store and applies them to this activation's journal, unless the
    /// body is stopping.
    fn write_all(&mut self, writes: Vec<Write>) -> Decision<()> {
        self.new_ground()?;
        for write in writes {
            self.push(write);
        }
        Ok(())
    }

    fn push(&mut self, write: Write) {
        if let Write::PutStep(row) = &write {
            self.next_seq = self.next_seq.max(row.seq + 1);
        }
        self.journal.apply(&write);
        self.outbox.push(write);
    }
}

/// The keys of the body's own rows (steps, sleeps, inputs, children; not the context's `$`
/// rows) in `journal`, with their sequence numbers.
fn body_rows(journal: &TaskState) -> impl Iterator<Item = (&str, u64)> {
    let steps = journal
        .steps
        .values()
        .map(|row| (row.key.as_str(), row.seq));
    let inputs = journal
        .inputs
        .values()
        .map(|row| (row.key.as_str(), row.seq));
    steps.chain(inputs).filter(|(key, _)| !is_own_key(key))
}

fn validate_name(name: &str) -> Result<(), EngineError> {
    let invalid = |reason| EngineError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("it is empty"));
    }
    if name.contains('#') {
        return Err(invalid("it contains '#'"));
    }
    if is_own_key(name) {
        return Err(invalid("it starts with '$'"));
    }
    Ok(())
}
