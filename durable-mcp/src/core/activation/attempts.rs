//! The step attempts an activation issued and has not heard back from: an answer names one of
//! them, so an answer to an attempt never issued (or answered twice) is caught, not recorded.

use std::collections::HashMap;
use std::time::Duration;

use crate::core::retry::RetryPolicy;
use crate::core::time::Timestamp;

/// Names a step attempt the machine issued, in the answer that reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttemptId(u64);

impl AttemptId {
    /// The attempt's number within its activation, for error messages.
    pub fn number(self) -> u64 {
        self.0
    }
}

/// A step attempt to run: what the runtime needs to run the closure once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// Names the attempt when it is reported ([`Activation::attempt_done`] or
    /// [`Activation::attempt_abandoned`]).
    ///
    /// [`Activation::attempt_done`]: super::Activation::attempt_done
    /// [`Activation::attempt_abandoned`]: super::Activation::attempt_abandoned
    pub id: AttemptId,
    /// The attempt's number within its step, from 1.
    pub number: u32,
    /// How long the closure may run before the attempt fails as timed out.
    pub timeout: Duration,
}

/// What the machine remembers of an attempt it issued, to record its answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Issued {
    /// The step's journal key.
    pub key: String,
    /// The attempt's number within its step, from 1.
    pub number: u32,
    /// The policy that decides whether a failed attempt is retried.
    pub policy: RetryPolicy,
    /// When the attempt was issued, to say how long it took.
    pub started_at: Timestamp,
}

/// The attempts issued and not answered yet.
#[derive(Debug, Default)]
pub(super) struct Attempts {
    issued: u64,
    running: HashMap<AttemptId, Issued>,
}

impl Attempts {
    /// Remembers `attempt` as running; its id names it in the answer.
    pub fn issue(&mut self, attempt: Issued) -> AttemptId {
        self.issued += 1;
        let id = AttemptId(self.issued);
        self.running.insert(id, attempt);
        id
    }

    /// The attempt `id` names, which is no longer running; `None` if it was not running.
    pub fn answer(&mut self, id: AttemptId) -> Option<Issued> {
        self.running.remove(&id)
    }

    /// Whether any attempt is still running.
    pub fn any_running(&self) -> bool {
        !self.running.is_empty()
    }
}
