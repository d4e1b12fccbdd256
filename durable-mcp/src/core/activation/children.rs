//! Child tasks, as the activation decides them: where a start records its row, whether the
//! child still has to be created, and what a wait for it returns.

use super::{Activation, Decision, rows};
use crate::core::child::{ChildOutcome, child_task_id, ended_row};
use crate::core::journal::{StepKind, StepStatus, Write};
use crate::core::outcome::Suspension;
use crate::core::own_keys::OwnKey;
use crate::core::time::Timestamp;
use crate::core::trace;

/// What a child task's start does next.
#[derive(Clone, Debug, PartialEq)]
pub enum ChildStart {
    /// Create the child under this id (again, if no run recorded that the creation
    /// succeeded: creating is idempotent), then confirm with
    /// [`Activation::child_created`] or [`Activation::child_refused`].
    Create(String),
    /// The child was created by an earlier run: nothing to do.
    Started(String),
    /// The child could not be created: the start fails with this message, now and on every
    /// replay.
    Refused(String),
}

impl Activation {
    /// Decides what the start of a child task under `key` does. On new ground (where a
    /// waiting cancellation is observed) it records the start's `child` row, which must be
    /// durable before the child is created: a crash in between leaves a row whose child a
    /// replay creates.
    pub fn start_child(&mut self, key: &str, now: Timestamp) -> Decision<ChildStart> {
        let task_id = child_task_id(self.task_id(), key);
        match self.recorded_step(key, StepKind::Child)? {
            Some(row) if row.status == StepStatus::Pending => {
                if self.journal.steps.contains_key(&OwnKey::Started(key).key()) {
                    Ok(ChildStart::Started(task_id))
                } else {
                    Ok(ChildStart::Create(task_id))
                }
            }
            Some(row) => match ChildOutcome::from_stored(row.result.as_deref()) {
                ChildOutcome::Refused { message } if row.status != StepStatus::Pending => {
                    Ok(ChildStart::Refused(message))
                }
                _ => Ok(ChildStart::Started(task_id)),
            },
            None => {
                self.break_ground()?;
                let row = rows::child(key, self.next_seq, now);
                self.write_all(vec![Write::PutStep(row)])?;
                Ok(ChildStart::Create(task_id))
            }
        }
    }

    /// The child started under `key` exists. Recorded under the context's own key
    /// `$started:<key>`, not on the start's row, which the child's outcome may have finished
    /// meanwhile; it goes out with the next write (a replay that misses it creates the child
    /// again, which finds it).
    pub fn child_created(&mut self, key: &str, now: Timestamp) {
        let started = OwnKey::Started(key).key();
        if !self.journal.steps.contains_key(&started) {
            trace::child_started(&self.journal.task, key, &child_task_id(self.task_id(), key));
            let row = rows::value(&started, "true".to_owned(), self.next_seq, now);
            // Refused only when the body is stopping; the next run confirms again.
            let _ = self.write_all(vec![Write::PutStep(row)]);
        }
    }

    /// The child started under `key` could not be created, for good: the start fails with
    /// `message`, recorded so that replays fail alike.
    pub fn child_refused(&mut self, key: &str, message: String, now: Timestamp) -> Decision<()> {
        let Some(row) = self.journal.steps.get(key) else {
            return Ok(());
        };
        let row = ended_row(row, &ChildOutcome::Refused { message }, now);
        self.write_all(vec![Write::PutStep(row)])
    }

    /// The outcome of the child started under `key` (its row's JSON text), or the body stops
    /// until the child ends and its outcome is delivered.
    pub fn join_child(&mut self, key: &str) -> Decision<String> {
        let Some(row) = self.journal.steps.get(key) else {
            // Every handle comes from a start, which recorded the row or stopped the body.
            return Err(self.suspend(Suspension::Wait));
        };
        if row.status == StepStatus::Pending {
            return Err(self.suspend(Suspension::Wait));
        }
        Ok(row.result.clone().unwrap_or_default())
    }

    /// The children the task started and has not heard back from, as `(key, child task id)`:
    /// what a cancellation of the task cancels before it settles.
    pub fn children_to_cancel(&self) -> Vec<(String, String)> {
        self.journal
            .pending_children()
            .map(|row| (row.key.clone(), child_task_id(self.task_id(), &row.key)))
            .collect()
    }

    /// The child under `key` was asked to stop as part of the task's cleanup: recorded under
    /// `$stopped:<key>` (the start's row is left to the child's outcome, which may have
    /// finished it already in the store).
    pub fn child_cancelled(&mut self, key: &str, now: Timestamp) -> Decision<()> {
        let stopped = OwnKey::Stopped(key).key();
        if self.journal.steps.contains_key(&stopped) {
            return Ok(());
        }
        let row = rows::pending_value(&stopped, self.next_seq, now);
        self.write_all(vec![Write::PutStep(row)])
    }
}
