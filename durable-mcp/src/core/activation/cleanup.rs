//! Cleanup after a cancel: the compensations a body registers, and the turn of a cancelled
//! activation to running them before the cleanup's deadline.

use std::time::Duration;

use super::{Activation, Decision, rows};
use crate::core::journal::{StepKind, Write};
use crate::core::outcome::Suspension;
use crate::core::own_keys::OwnKey;
use crate::core::time::Timestamp;

impl Activation {
    /// Registers the compensation `name` and returns its key (`$cleanup:<name>`, then `#2`,
    /// ... in call order), recording the registration unless an earlier run did: the row tells
    /// a cancel that there is cleanup to run. Registering breaks no ground, so it is recorded
    /// even with a cancellation waiting: what it compensates for happened before it. Once the
    /// task's cleanup has begun, the set is closed: a registration no earlier run recorded
    /// (the replay got past where the cancel stopped it, say an answer came meanwhile) is
    /// `None`, and does not run.
    pub fn register_cleanup(&mut self, name: &str, now: Timestamp) -> Decision<Option<String>> {
        self.refuse_nested(name)?;
        self.check_name(name)?;
        let key = self.claim_own(&OwnKey::Cleanup(name).key())?;
        if self.recorded_step(&key, StepKind::Do)?.is_none() {
            if self.journal.cleanup_deadline().is_some() {
                return Ok(None);
            }
            let row = rows::registered(&key, self.next_seq, now);
            // Refused only when the body is stopping: if for a cancel, the compensation runs
            // from the context's list all the same (and its step row records it).
            let _ = self.write_all(vec![Write::PutStep(row)]);
        }
        Ok(Some(key))
    }

    /// Stops a body that returned although the task's cancellation was recorded before this
    /// activation claimed it, or an earlier activation had begun the task's cleanup: whatever
    /// let the replay get that far without breaking new ground (an answer, a child's outcome,
    /// a wake-up recorded after the cancel), a recorded cancel ends the task `cancelled`, so
    /// the cleanup runs instead. Only an activation that was already running when the cancel
    /// came may complete the task. `false` if neither holds.
    pub fn stop_for_recorded_cancel(&mut self) -> bool {
        if !self.cancel_at_claim && self.journal.cleanup_deadline().is_none() {
            return false;
        }
        self.suspend(Suspension::Cancelled);
        true
    }

    /// Turns an activation stopped by a cancellation to its cleanup: the compensations the
    /// run registered go next, as steps under their keys, and may wait for retries, until the
    /// cleanup's deadline (recorded when a cleanup first begins, `timeout` from then). `false`
    /// if the body was not stopped by a cancellation or the deadline has passed: nothing runs.
    pub fn begin_cleanup(&mut self, timeout: Duration, now: Timestamp) -> bool {
        if self.suspension != Some(Suspension::Cancelled) {
            return false;
        }
        let recorded = self.journal.cleanup_deadline();
        let deadline = recorded.unwrap_or_else(|| now.saturating_add(timeout));
        if deadline <= now {
            return false;
        }
        self.suspension = None;
        self.cleanup_until = Some(deadline);
        if recorded.is_none() {
            let row = rows::cleanup_deadline(
                &OwnKey::CleanupDeadline.key(),
                deadline,
                self.next_seq,
                now,
            );
            self.push(Write::PutStep(row));
        }
        true
    }
}
