//! Cleanup after a cancel: the compensations a body registers with
//! [`TaskContext::on_cancel`], and how a cancelled task runs them.

use std::time::Duration;

use serde::Serialize;

use super::{Compensation, TaskContext};
use crate::core::activation::{Activation, Stop};
use crate::runtime::error::StepError;

impl TaskContext {
    /// Registers a compensation: if the task is cancelled from here on, `compensation` runs
    /// after the body stops, as a journaled step under `$cleanup:<name>`, before the task
    /// shows `cancelled`.
    ///
    /// Register one right after the step whose effect it undoes:
    ///
    /// ```ignore
    /// let booking = book_room(&cx, &trip).await?;
    /// let id = booking.id.clone();
    /// cx.on_cancel("release-room", move || async move { release_room(&id).await });
    /// ```
    ///
    /// When a `tasks/cancel` stops the body (at its next step, sleep or input, or at once if
    /// it is waiting), the compensations it registered run one after another, the last
    /// registered first. Each is a step like any other: recorded once done, never run again,
    /// retried with backoff under the task's retry policy (a panic is a failed attempt), and
    /// carried across restarts: the next activation replays the body up to the point where the
    /// cancel stopped it, which registers the same compensations, and runs those not done yet.
    /// One that fails for good is recorded as failed and the others still run. The task
    /// becomes `cancelled` when all have run, or when the task's
    /// [cleanup timeout](crate::TaskOptions::cleanup_timeout) (5 minutes unless set) is over,
    /// whichever comes first; its status message then says how many were left unrun.
    ///
    /// The closure is `'static`: it runs after the body's future is gone, so move what it
    /// needs into it. Like a step's, it reaches the outside world, not this context. A task
    /// that completes or fails runs none of its compensations.
    pub fn on_cancel<T, F, Fut>(&self, name: &str, compensation: F)
    where
        T: Serialize + 'static,
        F: FnOnce() -> Fut + 'static,
        Fut: Future<Output = Result<T, StepError>> + 'static,
    {
        let now = self.now_on_host();
        let key = match self.with(|m| m.register_cleanup(name, now)) {
            Ok(Some(key)) => Ok(key),
            // Registered after the cleanup began: it has nothing to undo.
            Ok(None) => return,
            Err(Stop) => Err(Stop),
        };
        let what = format!("the result of compensation {name:?}");
        let compensation: Compensation = Box::new(move || {
            Box::pin(async move {
                let value = compensation().await?;
                serde_json::to_value(value).map_err(|error| {
                    StepError::non_retryable(format!("{what} cannot be stored as JSON: {error}"))
                })
            })
        });
        self.compensations.borrow_mut().push((key, compensation));
    }

    /// Stops a body that returned although the task's cancellation was recorded before this
    /// run (see [`Activation::stop_for_recorded_cancel`]); `false` if it was not.
    pub(crate) fn stop_for_recorded_cancel(&self) -> bool {
        self.with(Activation::stop_for_recorded_cancel)
    }

    /// Whether a cancellation of this run has anything to clean up: compensations it
    /// registered, or children to cancel.
    pub(crate) fn has_cleanup(&self) -> bool {
        !self.compensations.borrow().is_empty() || self.has_children_to_cancel()
    }

    /// Cleans up once a cancellation stopped the body (whose future is gone): cancels the
    /// children it has not heard back from, then runs the compensations this run registered,
    /// the last first. Returns once all is done; parks when a compensation waits for a retry,
    /// the deadline passes, a child or the store cannot be reached (the machine says why).
    pub(crate) async fn clean_up(&self, timeout: Duration) {
        let registered = std::mem::take(&mut *self.compensations.borrow_mut());
        let now = self.now_on_host();
        if !self.with(|m| m.begin_cleanup(timeout, now)) {
            return;
        }
        // The cleanup's record is durable before any child hears of it: a child cancelled
        // by a cleanup that was then lost would deliver its outcome to a parent that
        // replays past its join instead of cleaning up.
        if self.flush().await.is_err() {
            return;
        }
        self.cancel_children().await;
        for (key, compensation) in registered.into_iter().rev() {
            // One that failed for good is recorded as failed; the others still run.
            let _ = self.run_step(key, None, None, compensation).await;
        }
    }

    /// Sends the writes the machine queued and no later write carried (records of values and
    /// registrations made after the body's last write), before an activation that waits ends.
    pub(crate) async fn flush_leftovers(&self) {
        let _ = self.flush().await;
    }
}
