//! The story format: what a story file under `stories/` holds, as serde types.
//!
//! A story is a header, a set of standing actions, pictures (scenes and sprites, inline SVG)
//! and a list of nodes. Every node plays some beats (lines of prose, `{name}` replaced by the
//! player's name) and then continues in exactly one way (`then`):
//!
//! ```json
//! { "id": "ford", "beats": ["{name} reaches the ford."],
//!   "then": { "fork": { "question": "Wade or wait?",
//!                       "options": [{ "id": "wade", "label": "Wade across", "goto": "far-bank" },
//!                                   { "id": "wait", "label": "Wait for dawn", "goto": "camp" }] } } }
//! ```
//!
//! The other continuations are `{ "ending": { "id", "prose" } }`, `{ "roll": { "branches": [..] } }`,
//! `{ "next": { "goto": "node" } }` and `"return"` (the end of a side story; an ending in a
//! side story ends the whole story). Unknown fields are rejected, and so is a key given twice
//! in `resources`, `scenes` or `sprites`, so a misspelt field or a pasted duplicate is an error
//! rather than silently ignored. The graph rules
//! (targets exist, no cycles, ...) are checked afterwards by [`validate`](super::validate).

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// The pause between beats when a story names none: 2.5 seconds.
pub const DEFAULT_PAUSE_MS: u64 = 2_500;

/// Changes to resources: resource name → amount added (negative to take away).
pub type Effects = BTreeMap<String, i64>;

/// A whole story, as parsed; [`load`](super::load) parses and validates one.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Story {
    /// The story's id (lowercase words joined by `-`), e.g. `"high-desert"`.
    pub id: String,
    /// The title shown to the player.
    pub title: String,
    /// One or two sentences saying what the story is about.
    pub blurb: String,
    /// The player's name when none is given.
    pub default_name: String,
    /// The story's phases, in order (at least one); nodes name one to move the story on.
    pub phases: Vec<Phase>,
    /// The resources the story tracks, with their starting amounts.
    #[serde(default, deserialize_with = "unique_keys")]
    pub resources: BTreeMap<String, i64>,
    /// The id of the first node.
    pub start: String,
    /// The scene shown until a node names another one.
    pub default_scene: String,
    /// The pause after each beat, in milliseconds, unless a node says otherwise (0: none).
    #[serde(default = "default_pause_ms")]
    pub pause_ms: u64,
    /// Actions the player may take at any time between beats of the main line.
    #[serde(default)]
    pub actions: Vec<StandingAction>,
    /// Backgrounds: scene id → SVG document.
    #[serde(default, deserialize_with = "unique_keys")]
    pub scenes: BTreeMap<String, String>,
    /// Foreground pictures: sprite id → SVG document.
    #[serde(default, deserialize_with = "unique_keys")]
    pub sprites: BTreeMap<String, String>,
    /// The nodes, in any order.
    pub nodes: Vec<Node>,
}

fn default_pause_ms() -> u64 {
    DEFAULT_PAUSE_MS
}

/// A JSON object as a map, refusing a key given twice (serde's maps keep the last silently).
fn unique_keys<'de, D, V>(deserializer: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct UniqueKeys<V>(PhantomData<V>);

    impl<'de, V: Deserialize<'de>> Visitor<'de> for UniqueKeys<V> {
        type Value = BTreeMap<String, V>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object whose keys are all different")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((key, value)) = map.next_entry::<String, V>()? {
                if out.contains_key(&key) {
                    return Err(A::Error::custom(format_args!(
                        "the key `{key}` is given twice; rename or remove one"
                    )));
                }
                out.insert(key, value);
            }
            Ok(out)
        }
    }

    deserializer.deserialize_map(UniqueKeys(PhantomData))
}

/// A phase of the story (a chapter the page can show as progress).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// The phase's id, named by nodes.
    pub id: String,
    /// The phase's label for the player.
    pub label: String,
}

/// An action the player may take between any two beats of the main line: it plays a side
/// story (from `goto` to a `return`) and the main line then goes on where it was.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StandingAction {
    /// The action's id, the answer that takes it.
    pub id: String,
    /// The action's label for the player.
    pub label: String,
    /// The first node of its side story.
    pub goto: String,
}

/// One node of the story graph.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// The node's id (lowercase words joined by `-`), unique in the story.
    pub id: String,
    /// The lines of prose the node plays, in order; `{name}` is the player's name.
    #[serde(default)]
    pub beats: Vec<String>,
    /// The scene shown from this node on.
    #[serde(default)]
    pub scene: Option<String>,
    /// A sprite shown with this node's first beat.
    #[serde(default)]
    pub sprite: Option<String>,
    /// The phase the story enters at this node.
    #[serde(default)]
    pub phase: Option<String>,
    /// How far along the story is from this node on, in percent (0 to 100).
    #[serde(default)]
    pub progress: Option<u8>,
    /// Changes to resources when the node is played.
    #[serde(default)]
    pub effects: Effects,
    /// A condition on a resource: when it does not hold, the node is skipped for another.
    #[serde(default)]
    pub gate: Option<Gate>,
    /// The pause after each of this node's beats, in milliseconds, instead of the story's.
    #[serde(default)]
    pub pause_ms: Option<u64>,
    /// How the story goes on after the beats.
    pub then: Continuation,
}

/// A condition on entering a node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    /// The resource tested.
    pub resource: String,
    /// The node is played only when the resource is at least this much.
    pub min: i64,
    /// The node played instead when the resource is below `min` (the field `else`).
    #[serde(rename = "else")]
    pub otherwise: String,
}

/// How a node continues once its beats are played: exactly one of these.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Continuation {
    /// The story ends here.
    Ending(Ending),
    /// The player chooses.
    Fork(Fork),
    /// Chance chooses, by weight.
    Roll(Roll),
    /// The story goes on at another node.
    Next {
        /// The node played next.
        goto: String,
    },
    /// A side story ends here and the main line goes on (written `"then": "return"`).
    Return,
}

/// An ending of the story.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ending {
    /// The ending's id, unique in the story, e.g. `"home-safe"`.
    pub id: String,
    /// The closing prose; `{name}` is the player's name.
    pub prose: String,
}

/// A choice put to the player.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fork {
    /// The question (ending with `?`).
    pub question: String,
    /// The options, at least one; the first one is taken when an untimed fork gets no valid
    /// answer.
    pub options: Vec<ForkOption>,
    /// How long the player has to answer, in milliseconds; needs a `fallback`.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The node played when a timed fork is not answered in time (or answered with no
    /// option); needs a `timeout_ms`.
    #[serde(default)]
    pub fallback: Option<String>,
}

/// One option of a fork.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkOption {
    /// The option's id, the answer that picks it; unique in its fork.
    pub id: String,
    /// The option's label for the player.
    pub label: String,
    /// The node played when it is picked.
    pub goto: String,
    /// Changes to resources when it is picked.
    #[serde(default)]
    pub effects: Effects,
}

/// A random choice between weighted branches.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Roll {
    /// The branches, at least one.
    pub branches: Vec<Branch>,
}

/// One branch of a roll.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Branch {
    /// The branch's weight (more than 0): its chance is its weight over the sum of weights.
    pub weight: u32,
    /// The node played when it is drawn.
    pub goto: String,
    /// A beat played when it is drawn, before going on.
    #[serde(default)]
    pub beat: Option<String>,
    /// Changes to resources when it is drawn.
    #[serde(default)]
    pub effects: Effects,
}

impl Continuation {
    /// The nodes this continuation may go to, each with the field that names it.
    pub fn targets(&self) -> Vec<(String, &str)> {
        match self {
            Continuation::Ending(_) | Continuation::Return => Vec::new(),
            Continuation::Next { goto } => vec![("then.next.goto".to_owned(), goto.as_str())],
            Continuation::Fork(fork) => {
                let options = fork.options.iter().enumerate().map(|(i, option)| {
                    (format!("then.fork.options[{i}].goto"), option.goto.as_str())
                });
                let fallback = fork
                    .fallback
                    .iter()
                    .map(|goto| ("then.fork.fallback".to_owned(), goto.as_str()));
                options.chain(fallback).collect()
            }
            Continuation::Roll(roll) => roll
                .branches
                .iter()
                .enumerate()
                .map(|(i, branch)| {
                    (
                        format!("then.roll.branches[{i}].goto"),
                        branch.goto.as_str(),
                    )
                })
                .collect(),
        }
    }
}

impl Node {
    /// Every node this node may lead to (its gate's `else` first), each with its field.
    pub fn targets(&self) -> Vec<(String, &str)> {
        let gate = self
            .gate
            .iter()
            .map(|gate| ("gate.else".to_owned(), gate.otherwise.as_str()));
        gate.chain(self.then.targets()).collect()
    }
}
