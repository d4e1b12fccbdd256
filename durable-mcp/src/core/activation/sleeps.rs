//! Sleeps, as the activation decides them: go on once due (or cut short by an answer), or
//! stop until then.

use std::time::Duration;

use super::{Activation, Decision, rows};
use crate::core::error::EngineError;
use crate::core::journal::{StepKind, StepStatus, Write};
use crate::core::outcome::Suspension;
use crate::core::time::{DurationError, Timestamp};

impl Activation {
    /// Decides what the sleep under `key` for `duration` (as the body gave it; a malformed one
    /// fails the task here) does: go on, or stop until it is due.
    pub fn sleep(
        &mut self,
        key: &str,
        duration: Result<Duration, DurationError>,
        now: Timestamp,
    ) -> Decision<()> {
        match duration {
            Ok(duration) => self.sleep_until(key, now.saturating_add(duration), now),
            Err(source) => {
                let what = format!("the duration of sleep {key:?}");
                Err(self.fail(EngineError::InvalidDuration { what, source }))
            }
        }
    }

    /// Decides what the sleep under `key`, ending at `wake_at` (at the latest
    /// [`Timestamp::MAX`]), does: go on, or stop until it is due. A sleep ends early when an
    /// offer's answer asked for the next sleep to be cut; the cut is spent on that one sleep.
    pub fn sleep_until(&mut self, key: &str, wake_at: Timestamp, now: Timestamp) -> Decision<()> {
        let wake_at = wake_at.min(Timestamp::MAX);
        // The number a new row would take; `push` moves past it if the row is written.
        let seq = self.next_seq;
        let (row, recorded) = match self.recorded_step(key, StepKind::Sleep)? {
            Some(row) if row.status != StepStatus::Pending => return Ok(()),
            Some(row) => (row.clone(), true),
            None => {
                self.observe_cancel()?;
                (rows::pending_sleep(key, wake_at, seq, now), false)
            }
        };
        let cut = self.journal.task.cut_next_sleep;
        let due = row.wake_at.is_none_or(|at| at <= now);
        if !due && !cut {
            if !recorded {
                self.write_all(vec![Write::PutStep(row)])?;
            }
            return Err(self.suspend(Suspension::Wait));
        }
        let mut done = row;
        done.status = StepStatus::Completed;
        done.completed_at = Some(now);
        let mut writes = vec![Write::PutStep(done)];
        if cut {
            // The answer that asked for a sleep to be cut is spent on this one.
            writes.push(Write::ClearSleepCut);
        }
        self.write_all(writes)
    }
}
