//! The keys of the engine's own records in a task's journal, beside the body's steps, sleeps,
//! inputs and children. They all start with `$`, which the body's names cannot
//! (`activation::check_name`), so the two never meet.

/// What marks a key as the engine's own.
const MARK: char = '$';

/// One of the engine's own journal keys. [`key`](Self::key) spells it; nothing else does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnKey<'a> {
    /// The name whose occurrences key the clock readings: `$now`, `$now#2`, ...
    Now,
    /// The task's random seed, recorded by its first draw: `$random`.
    Seed,
    /// Which side of the patch gate with this id the task took: `$patch:<id>`.
    Patch(&'a str),
    /// The compensation registered under this name (`$cleanup:<name>`; its occurrences then
    /// `#2`, ...). Its `do` row is pending from registration until the compensation has run.
    Cleanup(&'a str),
    /// The row holding a cancelled task's cleanup deadline (its `wake_at`), written when the
    /// cleanup begins and pending until the task is settled: `$cancelled`.
    CleanupDeadline,
    /// The record that the child started under this key was created: `$started:<key>`.
    Started(&'a str),
    /// The record that a cancelled task's cleanup asked the child started under this key to
    /// stop: `$stopped:<key>`, a pending `value` row kept until the task is purged (pending
    /// rows are in every load scope). A record of its own, not a change to the start's row,
    /// which the child's outcome may finish at any time.
    Stopped(&'a str),
}

impl OwnKey<'_> {
    /// The key as the journal stores it.
    pub fn key(self) -> String {
        match self {
            OwnKey::Now => format!("{MARK}now"),
            OwnKey::Seed => format!("{MARK}random"),
            OwnKey::Patch(id) => format!("{MARK}patch:{id}"),
            OwnKey::Cleanup(name) => format!("{MARK}cleanup:{name}"),
            OwnKey::CleanupDeadline => format!("{MARK}cancelled"),
            OwnKey::Started(key) => format!("{MARK}started:{key}"),
            OwnKey::Stopped(key) => format!("{MARK}stopped:{key}"),
        }
    }
}

/// Whether `key` is one of the engine's own records rather than the body's.
pub fn is_own_key(key: &str) -> bool {
    key.starts_with(MARK)
}

/// Whether `key` is a compensation's (any occurrence of any name).
pub fn is_cleanup_key(key: &str) -> bool {
    key.starts_with(&OwnKey::Cleanup("").key())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_own_key_is_marked_and_compensations_are_told_apart() {
        let keys = [
            OwnKey::Now,
            OwnKey::Seed,
            OwnKey::Patch("p"),
            OwnKey::Cleanup("undo"),
            OwnKey::CleanupDeadline,
            OwnKey::Started("resize"),
            OwnKey::Stopped("resize"),
        ];
        for key in keys {
            assert!(is_own_key(&key.key()), "{key:?}");
            let cleanup = matches!(key, OwnKey::Cleanup(_));
            assert_eq!(is_cleanup_key(&key.key()), cleanup, "{key:?}");
        }
        assert_eq!(OwnKey::Cleanup("undo").key(), "$cleanup:undo");
        assert!(!is_own_key("fetch"));
    }
}
