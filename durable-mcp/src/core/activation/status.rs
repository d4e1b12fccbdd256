//! Status calls: numbered in call order, and published once across replays.

use super::{Activation, Decision, Serialised, values};
use crate::core::journal::Write;
use crate::core::time::Timestamp;

impl Activation {
    /// Numbers a `status` call (in call order, like keys); publish it with
    /// [`publish`](Self::publish).
    pub fn status_call(&mut self) -> Decision<u32> {
        self.refuse_nested("status")?;
        self.status_calls += 1;
        Ok(self.status_calls)
    }

    /// Publishes the `ordinal`-th status call with `meta`, if given (a JSON object within its
    /// limit, or the task fails here, replaying or not), unless an earlier run of the body
    /// already published it.
    pub fn publish(
        &mut self,
        ordinal: u32,
        message: String,
        meta: Option<Serialised>,
        now: Timestamp,
    ) -> Decision<()> {
        let meta = match meta.map(|meta| values::status_meta(self.limits(), meta)) {
            None => None,
            Some(Ok(meta)) => Some(meta),
            Some(Err(error)) => return Err(self.fail(error)),
        };
        // Replays never publish an old message again.
        if ordinal <= self.journal.task.status_published {
            return Ok(());
        }
        let write = Write::PublishStatus {
            message,
            meta,
            published: ordinal,
            at: now,
        };
        self.write_all(vec![write])
    }
}
