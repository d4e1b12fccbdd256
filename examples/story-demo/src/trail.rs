//! The trail: the last few things the walk did (beats, pauses, forks and their answers, rolls,
//! actions), published with every beat so that a page polling `tasks/get` can show a journal
//! of the play-through even though each poll sees only the latest status.

use std::collections::VecDeque;

use serde::Serialize;

/// How many entries each status carries: enough that a page polling once a second between
/// beats 2.5 s apart never misses one, small enough for the 8 KiB status meta limit.
pub const TRAIL_LENGTH: usize = 16;

/// The longest entry text kept, in characters.
const MAX_TEXT_CHARS: usize = 200;

/// What an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A line of the story.
    Beat,
    /// A durable sleep.
    Pause,
    /// A fork put to the player.
    Fork,
    /// The player's answer to a fork.
    Answer,
    /// A fork nobody answered in time (or declined).
    Timeout,
    /// A journaled random draw.
    Roll,
    /// A standing action the player took.
    Action,
    /// The ending.
    Ending,
}

/// One thing the walk did; `seq` counts from 1 over the whole walk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The entry's number in the walk.
    pub seq: u64,
    /// What it records.
    pub kind: Kind,
    /// What to show.
    pub text: String,
}

/// The last [`TRAIL_LENGTH`] entries of a walk.
#[derive(Clone, Debug, Default)]
pub struct Trail {
    entries: VecDeque<Entry>,
    count: u64,
}

impl Trail {
    /// Records `text` as the walk's next entry.
    pub fn push(&mut self, kind: Kind, text: impl Into<String>) {
        let mut text: String = text.into();
        if let Some((cut, _)) = text.char_indices().nth(MAX_TEXT_CHARS) {
            text.truncate(cut);
            text.push('…');
        }
        self.count += 1;
        if self.entries.len() == TRAIL_LENGTH {
            self.entries.pop_front();
        }
        self.entries.push_back(Entry {
            seq: self.count,
            kind,
            text,
        });
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_entries_numbered_over_the_whole_walk() {
        let mut trail = Trail::default();
        for i in 0..TRAIL_LENGTH + 3 {
            trail.push(Kind::Beat, format!("beat {i}"));
        }
        let seqs: Vec<u64> = trail.entries().map(|entry| entry.seq).collect();
        assert_eq!(seqs.len(), TRAIL_LENGTH);
        assert_eq!(seqs.first(), Some(&4));
        assert_eq!(seqs.last(), Some(&(TRAIL_LENGTH as u64 + 3)));
    }

    #[test]
    fn long_texts_are_cut() {
        let mut trail = Trail::default();
        trail.push(Kind::Beat, "é".repeat(500));
        let text = &trail.entries().next().unwrap().text;
        assert_eq!(text.chars().count(), MAX_TEXT_CHARS + 1);
        assert!(text.ends_with('…'));
    }
}
