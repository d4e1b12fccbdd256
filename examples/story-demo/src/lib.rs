//! `story-demo`: interactive stories told by a durable task.
//!
//! A story is data: a JSON file under `stories/` (see [`story::format`]), checked as a whole
//! when it is loaded ([`story::validate`]), and told by a pure, deterministic walk
//! ([`story::walk`]) whose events map one to one onto the operations of a durable task
//! (status, sleep, elicitation, journaled step, offer, input check). Because the walk reads
//! nothing but the story, the player's name, a seed and the answers fed back to it, a replay
//! that feeds back the journaled answers retells the same story.

pub mod story;

/// The test fixture story (`stories/fixture.json`): a handful of nodes with short pauses, a
/// fork, a timed fork, a roll, a gate, a standing action and two endings.
pub const FIXTURE_JSON: &str = include_str!("../stories/fixture.json");

/// The stories the demo ships, as JSON: `(id, file contents)`, the fixture last.
pub const STORIES: &[(&str, &str)] = &[
    ("lighthouse", include_str!("../stories/lighthouse.json")),
    ("salvage", include_str!("../stories/salvage.json")),
    ("fixture", FIXTURE_JSON),
];
