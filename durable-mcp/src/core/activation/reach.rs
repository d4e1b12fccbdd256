//! The journal must be reached: new ground deferred while recorded keys are unreached, and the
//! task failed when the body returns, waits or breaks new ground without reaching them.

use super::{Activation, body_rows};
use crate::core::error::{Divergence, EngineError};
use crate::core::journal::{StepKind, StepStatus};
use crate::core::outcome::Suspension;
use crate::core::own_keys::is_own_key;

impl Activation {
    /// Whether the operation under `key`, about to break new ground (no row is recorded under
    /// it), must wait for [`judge_deferred_ground`](Self::judge_deferred_ground) first: an
    /// earlier run recorded keys this run has not reached, so either another branch of the
    /// body still reaches them, or the code changed under the task and this new ground would
    /// run in their place. The cleanup's compensations and a body stopping for a cancel wait
    /// for nothing.
    pub fn defers_new_ground(&mut self, key: &str) -> bool {
        let defers = self.unreached > 0
            && self.journal.recorded_kind(key).is_none()
            && self.cleanup_until.is_none()
            && !self.cancel_requested
            && self
                .suspension
                .as_ref()
                .is_none_or(Suspension::lets_branches_go_on);
        if defers && self.deferred_ground.is_none() {
            self.deferred_ground = Some(key.to_owned());
        }
        defers
    }

    /// Whether new ground waits for a judgement.
    pub fn ground_deferred(&self) -> bool {
        self.deferred_ground.is_some()
    }

    /// Judges the deferred new ground once the body paused (`busy`: the context still awaits
    /// something of its own, such as a yield to the host): released (`true`) once every
    /// recorded key is reached; the task fails with [`EngineError::UnreachedJournal`] once no
    /// branch can go on (no step attempt runs, nothing is awaited) and some are still not
    /// reached. `false` while the body may still reach them.
    pub fn judge_deferred_ground(&mut self, busy: bool) -> bool {
        let Some(new_ground) = &self.deferred_ground else {
            return false;
        };
        if self.unreached == 0 {
            self.deferred_ground = None;
            return true;
        }
        if busy || self.attempts.any_running() {
            return false;
        }
        let instead = Divergence::NewGround(new_ground.clone());
        self.deferred_ground = None;
        self.diverged(instead);
        true
    }

    /// Fails the task if its body returned without reaching every key an earlier run recorded:
    /// the code changed under the task, and what it skipped would otherwise end unnoticed.
    /// `false` if every key was reached.
    pub fn fail_unreached_journal(&mut self) -> bool {
        if self.unreached == 0 {
            return false;
        }
        self.diverged(Divergence::Returned);
        true
    }

    /// Fails the task if its body stopped to wait while rows it did not reach still ask for a
    /// wake-up (a step's retry, a sleep's end): the code no longer reaches them before its
    /// wait, so each such wake-up would run the body to the same wait, at once and again.
    /// `false` if no unreached row asks for one (the body may still reach them after its
    /// wait, as a step moved behind a wait does).
    pub fn fail_stranded_journal(&mut self) -> bool {
        if self.unreached == 0 {
            return false;
        }
        let stranded = self.journal.steps.values().any(|row| {
            let wakes = match row.kind {
                StepKind::Do => row.next_attempt_at.is_some(),
                StepKind::Sleep => row.wake_at.is_some(),
                _ => false,
            };
            wakes
                && row.status == StepStatus::Pending
                && !is_own_key(&row.key)
                && !self.reached.contains(&row.key)
        });
        if stranded {
            self.diverged(Divergence::Waited);
        }
        stranded
    }

    /// Fails the task: the body did `instead` of reaching the keys it has not reached.
    fn diverged(&mut self, instead: Divergence) {
        let keys = self.unreached_keys();
        self.fail(EngineError::UnreachedJournal { keys, instead });
    }

    /// The keys of the loaded journal this run has not reached, in the order they were
    /// recorded.
    fn unreached_keys(&self) -> Vec<String> {
        let mut keys: Vec<(u64, &str)> = body_rows(&self.journal)
            .filter(|(key, _)| !self.reached.contains(*key))
            .map(|(key, seq)| (seq, key))
            .collect();
        keys.sort_unstable();
        keys.into_iter().map(|(_, key)| key.to_owned()).collect()
    }
}
