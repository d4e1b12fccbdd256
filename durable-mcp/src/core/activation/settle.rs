//! The store and the end: the writes queued for the store, how it took them, and how the
//! activation ended.

use super::{Activation, Decision, Stop};
use crate::core::journal::{Applied, Write};
use crate::core::outcome::{End, Suspension};

impl Activation {
    /// The writes decided since the last call, for the store to apply atomically under
    /// [`guard`](Self::guard).
    pub fn take_writes(&mut self) -> Vec<Write> {
        std::mem::take(&mut self.outbox)
    }

    /// How the store took the last writes: `Ok` with what it applied, or its error message.
    pub fn committed(&mut self, result: Result<Applied, String>) -> Decision<()> {
        match result {
            Ok(Applied::Done { cancel_requested }) => {
                self.cancel_requested = cancel_requested;
                Ok(())
            }
            Ok(Applied::Stale) => Err(self.suspend(Suspension::Stale)),
            Err(message) => Err(self.store_failed(message)),
        }
    }

    /// The store failed (with this message) to apply writes or to read for the body: the
    /// body stops, and the claim's redelivery runs it again.
    pub fn store_failed(&mut self, message: String) -> Stop {
        self.suspend(Suspension::StoreUnavailable(message))
    }

    /// How the activation ended, once it has: a reason to stop is recorded and no step attempt
    /// that should be recorded is still running.
    pub fn end(&self) -> Option<End> {
        let suspension = self.suspension.as_ref()?;
        if suspension.drains() && self.attempts.any_running() {
            return None;
        }
        Some(End {
            suspension: suspension.clone(),
            rerun: self.rerun,
        })
    }
}
