//! Names and the journal keys they claim: the body's own names (`name`, `name#2`, ...), the
//! context's own (`$now`, ...), and the idempotency keys derived from them.

use super::{Activation, Decision};

impl Activation {
    /// Claims the journal key of the next occurrence of `name`: `name`, then `name#2`, ...
    /// Keys are claimed when an operation is called, so they follow the order of the calls.
    pub fn claim(&mut self, name: &str) -> Decision<String> {
        self.refuse_nested(name)?;
        self.check_name(name)?;
        let count = self.occurrences.entry(name.to_owned()).or_insert(0);
        *count += 1;
        let key = occurrence_key(name, *count);
        // The code reaches the operation where it calls it, whether or not it awaits it.
        self.reach(&key);
        Ok(key)
    }

    /// The key the next call of `name` will claim, prefixed with the task id: a key for external
    /// deduplication, the same on every attempt and replay.
    pub fn idempotency_key(&self, name: &str) -> String {
        let taken = self.occurrences.get(name).copied().unwrap_or(0);
        format!("{}:{}", self.task_id(), occurrence_key(name, taken + 1))
    }

    /// Claims the next key of one of the context's own names (`$now`): as
    /// [`claim`](Self::claim), without the check that keeps `$` out of the body's names.
    pub(super) fn claim_own(&mut self, name: &str) -> Decision<String> {
        self.refuse_nested(name)?;
        let count = self.occurrences.entry(name.to_owned()).or_insert(0);
        *count += 1;
        Ok(occurrence_key(name, *count))
    }
}

/// The journal key of occurrence `count` (from 1) of `name` in a run: `name`, `name#2`, ...
fn occurrence_key(name: &str, count: u32) -> String {
    if count == 1 {
        name.to_owned()
    } else {
        format!("{name}#{count}")
    }
}
