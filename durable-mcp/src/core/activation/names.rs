//! Names and the journal keys they claim: the body's own names (`name`, `name#2`, ...), the
//! context's own (`$now`, ...), and the idempotency keys derived from them.

use std::fmt;

use super::{Activation, Decision};
use crate::core::trace;

/// What an operation of the body claims a name for. Every kind draws on one set of names, so
/// a step and an elicitation both named `send` get the keys `send` and `send#2`: legal, and
/// kept so for the journals that have it, but rarely meant, so the second kind is warned of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameUse {
    /// A step (`cx.step`, a `#[step]` fn).
    Step,
    /// A durable sleep.
    Sleep,
    /// An elicitation.
    Elicitation,
    /// A standing offer.
    Offer,
    /// A read of an offer's answer.
    InputCheck,
    /// The start of a child task.
    ChildStart,
}

impl fmt::Display for NameUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameUse::Step => "step",
            NameUse::Sleep => "sleep",
            NameUse::Elicitation => "elicitation",
            NameUse::Offer => "offer",
            NameUse::InputCheck => "input check",
            NameUse::ChildStart => "child start",
        })
    }
}

/// The calls of one name in this run.
#[derive(Debug)]
pub(super) struct Occurrences {
    /// How many claimed it.
    count: u32,
    /// What the first claimed it for.
    first_use: Option<NameUse>,
    /// Whether a call of another kind was warned of (once a run).
    warned: bool,
}

impl Occurrences {
    const NONE: Occurrences = Occurrences {
        count: 0,
        first_use: None,
        warned: false,
    };
}

impl Activation {
    /// Claims the journal key of the next occurrence of `name`, for an operation of kind
    /// `used_as`: `name`, then `name#2`, ... Keys are claimed when an operation is called, so
    /// they follow the order of the calls.
    pub fn claim(&mut self, name: &str, used_as: NameUse) -> Decision<String> {
        self.refuse_nested(name)?;
        self.check_name(name)?;
        let calls = self
            .occurrences
            .entry(name.to_owned())
            .or_insert(Occurrences::NONE);
        calls.count += 1;
        let key = occurrence_key(name, calls.count);
        let first_use = *calls.first_use.get_or_insert(used_as);
        if first_use != used_as && !calls.warned {
            calls.warned = true;
            trace::name_shared(&self.journal.task, name, first_use, used_as, &key);
        }
        // The code reaches the operation where it calls it, whether or not it awaits it.
        self.reach(&key);
        Ok(key)
    }

    /// The key the next call of `name` will claim, prefixed with the task id: a key for external
    /// deduplication, the same on every attempt and replay.
    pub fn idempotency_key(&self, name: &str) -> String {
        let taken = self.occurrences.get(name).map_or(0, |calls| calls.count);
        format!("{}:{}", self.task_id(), occurrence_key(name, taken + 1))
    }

    /// Claims the next key of one of the context's own names (`$now`): as
    /// [`claim`](Self::claim), without the check that keeps `$` out of the body's names.
    pub(super) fn claim_own(&mut self, name: &str) -> Decision<String> {
        self.refuse_nested(name)?;
        let calls = self
            .occurrences
            .entry(name.to_owned())
            .or_insert(Occurrences::NONE);
        calls.count += 1;
        Ok(occurrence_key(name, calls.count))
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
