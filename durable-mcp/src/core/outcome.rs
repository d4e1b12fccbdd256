//! How a run of a task's body ended: what the activation machine decides, the tick settles
//! and tracing reports.

use serde_json::Value;

use super::error::EngineError;
use super::task::TaskFailure;

/// How a run of the body ended, as far as the task's status goes.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyOutcome {
    /// The body returned this result.
    Returned(Value),
    /// The body failed with a JSON-RPC error: the task fails with it.
    Refused(TaskFailure),
    /// The body returned an error or panicked: the task completes with a tool error carrying
    /// this message.
    Errored(String),
    /// The body stopped at a suspension point.
    Stopped(End),
}

/// How an activation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct End {
    /// Why the body stopped.
    pub suspension: Suspension,
    /// A step attempt that was still running when the body stopped finished and recorded a
    /// result meanwhile: the body should run again at once to see it, instead of waiting for
    /// the wake the suspension asked for.
    pub rerun: bool,
}

/// Why an activation stops before its body returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Suspension {
    /// Waiting for time or input; the schedule holds the next wake.
    Wait,
    /// A cancellation was observed at a step boundary.
    Cancelled,
    /// A newer activation or a terminal status owns the task; this one must not write.
    Stale,
    /// The store failed; the redelivery anchor runs the body again later.
    StoreUnavailable(String),
    /// An engine failure: the task fails.
    Fail(EngineError),
    /// The activation ran past the host's hand-off time; another runs the body on at once.
    HandOff,
}

impl Suspension {
    /// Whether step attempts already running finish and are recorded before the activation
    /// ends. Only waits do: after a cancel, a failure or a lost lease their results could not
    /// change what happens to the task.
    pub(crate) fn drains(&self) -> bool {
        matches!(self, Suspension::Wait | Suspension::HandOff)
    }

    /// Whether other branches of the body may still break new ground: only while one branch
    /// waits. A hand-off starts nothing new, and the other reasons end the activation at once.
    pub(crate) fn lets_branches_go_on(&self) -> bool {
        matches!(self, Suspension::Wait)
    }

    /// Which of two reasons stands: the one that decides more about the task. A lost lease
    /// writes nothing at all; a failed store settles nothing; a failure or a cancellation ends
    /// the task whatever else waits; a hand-off runs the body again sooner than a wait.
    pub(crate) fn weight(&self) -> u8 {
        match self {
            Suspension::Wait => 0,
            Suspension::HandOff => 1,
            Suspension::Cancelled => 2,
            Suspension::Fail(_) => 3,
            Suspension::StoreUnavailable(_) => 4,
            Suspension::Stale => 5,
        }
    }
}
