//! The walk: a pure state machine that tells a [`ValidStory`] one [`Event`] at a time.
//!
//! The caller asks for the next event with [`Walk::next`], performs it, and passes what it
//! got back (an [`Answer`]) with the following call. Each event is one durable-task
//! operation:
//!
//! | event | task operation | answer fed back |
//! | --- | --- | --- |
//! | [`Event::Beat`] | `cx.status(text).meta(meta)` | none |
//! | [`Event::Pause`] | `cx.sleep(key, duration)` | none |
//! | [`Event::Ask`] | `cx.elicit(key, ..)`, with `.timeout(..)` when it has one | [`Answer::Choice`] or [`Answer::TimedOut`] |
//! | [`Event::Roll`] | `cx.step(key, ..)` journaling the proposed draw | [`Answer::Draw`] with the journaled draw |
//! | [`Event::Offer`] | `cx.offer(key, ..)` | none |
//! | [`Event::Check`] | `cx.check_input(key, offer)` | [`Answer::Action`] when the player pressed one |
//! | [`Event::Ending`] | the task's result | (the walk is over) |
//!
//! # Order of play
//!
//! If the story has standing actions, they are offered first (`actions-1`). Entering a node:
//! its gate is tested (a resource below `min` goes to the gate's `else` without playing the
//! node), its effects are applied and its scene, phase and progress take effect. Each beat is
//! then followed by its pause and, on the main line when actions stand, by a check of the
//! standing offer. A check that finds an action plays that action's side story (no checks
//! inside it), then offers the actions again under a new key and goes on with the next beat.
//! After the beats comes the continuation: an ending ends the walk, a fork asks, a roll draws
//! (applying the branch's effects and playing its beat and pause), `next` goes on, and a
//! side story's `return` goes back to the main line.
//!
//! # Journal keys
//!
//! Every event that becomes a journaled operation carries a key, unique within the walk and
//! the same on every replay: `pause:<node>:<beat>`, `pause:<node>:roll`, `fork:<node>`,
//! `roll:<node>`, `check:<node>:<beat>` and `actions-<n>`. The graph is acyclic (see
//! [`validate`](super::validate)), so a main-line node is played once; the `n`-th side story
//! of a walk prefixes its keys with `a<n>:` (e.g. `a2:pause:peek:0`), since an action may be
//! taken more than once. Ids are kebab-case, so keys never contain `#`, which the task
//! runtime reserves.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::format::{Continuation, Effects, Node};
use super::prng;
use super::validate::ValidStory;

/// One thing for the task to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Show a line of prose and the picture state (a status message with meta).
    Beat {
        /// The prose, `{name}` replaced.
        text: String,
        /// The picture and progress state to publish with it.
        meta: BeatMeta,
    },
    /// Wait durably.
    Pause {
        /// The sleep's journal key.
        key: String,
        /// How long.
        duration: Duration,
    },
    /// Ask the player to choose (an elicitation).
    Ask {
        /// The elicitation's journal key.
        key: String,
        /// The question.
        question: String,
        /// The options, in order.
        options: Vec<Choice>,
        /// How long the player has, for a timed fork.
        timeout: Option<Duration>,
    },
    /// Journal a random draw: the walk proposes `draw`, the task records it in a step and
    /// answers [`Answer::Draw`] with what the journal holds.
    Roll {
        /// The step's journal key.
        key: String,
        /// The walk's draw for this key, from its seed.
        draw: u64,
    },
    /// Offer the standing actions (a non-blocking offer).
    Offer {
        /// The offer's key.
        key: String,
        /// The actions offered.
        actions: Vec<ActionChoice>,
    },
    /// Read, without waiting, whether the player took a standing action.
    Check {
        /// The check's journal key.
        key: String,
        /// The key of the offer it reads.
        offer: String,
    },
    /// The story is over (every later call returns this again).
    Ending {
        /// The ending's id.
        id: String,
        /// The closing prose, `{name}` replaced.
        text: String,
    },
}

/// What the task got back from the last event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The player chose the option with this id (after [`Event::Ask`]).
    Choice(String),
    /// The player did not answer in time, or declined (after [`Event::Ask`]).
    TimedOut,
    /// The journaled draw (after [`Event::Roll`]).
    Draw(u64),
    /// The player took the standing action with this id (after [`Event::Check`]); any other
    /// answer to a check also consumed the offer, which is then made again.
    Action(String),
}

/// The picture state published with a beat.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BeatMeta {
    /// The scene shown.
    pub scene: String,
    /// A sprite shown with this beat only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sprite: Option<String>,
    /// The current phase, once a node set one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// How far along the story is, in percent, once a node set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<u8>,
    /// The standing actions and the key of their current offer, on the main line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<ActionSet>,
}

/// The standing actions on offer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ActionSet {
    /// The offer's key (answer it with `tasks/update` under this key).
    pub key: String,
    /// The actions.
    pub options: Vec<ActionChoice>,
}

/// A standing action as offered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ActionChoice {
    /// The action's id.
    pub id: String,
    /// The action's label.
    pub label: String,
}

/// A fork option as asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Choice {
    /// The option's id.
    pub id: String,
    /// The option's label.
    pub label: String,
}

/// Where the walk is within a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// The very start: offer the standing actions, if any.
    Begin,
    /// Test the gate, apply effects, take the pictures.
    Enter,
    /// Play beat `i` (or go to the continuation when there is none left).
    Beat(usize),
    /// The pause after beat `i`.
    Pause(usize),
    /// The check after beat `i`.
    Check(usize),
    /// Waiting for the answer to the check after beat `i`.
    Checked(usize),
    /// Offer the actions again, then play beat `i`.
    Reoffer(usize),
    /// The continuation.
    Continue,
    /// Waiting for the answer to the fork.
    Asked,
    /// Waiting for the journaled draw.
    Rolled,
    /// The pause after a roll branch's beat, then go to the branch.
    RollPause(usize),
    /// Go to branch `i`'s node.
    RollGoto(usize),
    /// Over.
    Ended,
}

/// A position: a node and a stage in it.
#[derive(Clone, Copy, Debug)]
struct Position<'s> {
    node: &'s Node,
    stage: Stage,
}

/// A side story being played: its key prefix and where the main line resumes.
#[derive(Clone, Debug)]
struct Side<'s> {
    prefix: String,
    resume: Position<'s>,
}

/// A walk through a story: see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Walk<'s> {
    story: &'s ValidStory,
    name: String,
    seed: u64,
    resources: BTreeMap<String, i64>,
    scene: String,
    phase: Option<String>,
    progress: Option<u8>,
    sprite: Option<String>,
    offers: usize,
    side_runs: usize,
    side: Option<Side<'s>>,
    at: Position<'s>,
    ending: Option<Event>,
}

impl<'s> Walk<'s> {
    /// A walk through `story` for a player called `name`, whose rolls follow `seed`.
    pub fn new(story: &'s ValidStory, name: &str, seed: u64) -> Self {
        Walk {
            story,
            name: name.to_owned(),
            seed,
            resources: story.resources.clone(),
            scene: story.default_scene.clone(),
            phase: None,
            progress: None,
            sprite: None,
            offers: 0,
            side_runs: 0,
            side: None,
            at: Position {
                node: story.node(&story.start),
                stage: Stage::Begin,
            },
            ending: None,
        }
    }

    /// The resources as they stand now.
    pub fn resources(&self) -> &BTreeMap<String, i64> {
        &self.resources
    }

    /// The next event, given the answer to the previous one (`None` when it has none). An
    /// answer of the wrong kind counts as none: an unanswered fork takes its fallback (or its
    /// first option), a roll without a draw uses the walk's own.
    pub fn next(&mut self, answer: Option<Answer>) -> Event {
        let mut answer = answer;
        loop {
            if let Some(event) = self.advance(answer.take()) {
                return event;
            }
        }
    }

    /// One move: returns the event it yields, or `None` when it only moved.
    fn advance(&mut self, answer: Option<Answer>) -> Option<Event> {
        let node = self.at.node;
        match self.at.stage {
            Stage::Begin => {
                self.at.stage = Stage::Enter;
                self.offer()
            }
            Stage::Enter => {
                self.enter(node);
                None
            }
            Stage::Beat(i) => {
                let Some(text) = node.beats.get(i) else {
                    self.at.stage = Stage::Continue;
                    return None;
                };
                self.at.stage = Stage::Pause(i);
                Some(self.beat(text))
            }
            Stage::Pause(i) => {
                self.at.stage = Stage::Check(i);
                let key = self.key(&format!("pause:{}:{i}", node.id));
                self.pause(node, key)
            }
            Stage::Check(i) => {
                if self.side.is_some() || self.story.actions.is_empty() {
                    self.at.stage = Stage::Beat(i + 1);
                    return None;
                }
                self.at.stage = Stage::Checked(i);
                Some(Event::Check {
                    key: format!("check:{}:{i}", node.id),
                    offer: self.offer_key(),
                })
            }
            Stage::Checked(i) => {
                self.at.stage = Stage::Beat(i + 1);
                // No answer: the offer still stands, so the next beat comes.
                let answer = answer?;
                self.at.stage = Stage::Reoffer(i + 1);
                if let Answer::Action(id) = answer
                    && let Some(action) = self.story.actions.iter().find(|a| a.id == id)
                {
                    self.side_runs += 1;
                    self.side = Some(Side {
                        prefix: format!("a{}:", self.side_runs),
                        resume: self.at,
                    });
                    self.goto(&action.goto);
                }
                None
            }
            Stage::Reoffer(i) => {
                self.at.stage = Stage::Beat(i);
                self.offer()
            }
            Stage::Continue => self.continuation(node),
            Stage::Asked => {
                self.answer_fork(node, answer);
                None
            }
            Stage::Rolled => self.answer_roll(node, answer),
            Stage::RollPause(branch) => {
                self.at.stage = Stage::RollGoto(branch);
                let key = self.key(&format!("pause:{}:roll", node.id));
                self.pause(node, key)
            }
            Stage::RollGoto(branch) => {
                if let Continuation::Roll(roll) = &node.then {
                    self.goto(&roll.branches[branch].goto);
                }
                None
            }
            Stage::Ended => self.ending.clone(),
        }
    }

    /// Enters `node`: its gate, effects and pictures.
    fn enter(&mut self, node: &'s Node) {
        if let Some(gate) = &node.gate
            && self.resource(&gate.resource) < gate.min
        {
            self.goto(&gate.otherwise);
            return;
        }
        self.apply(&node.effects);
        if let Some(scene) = &node.scene {
            self.scene.clone_from(scene);
        }
        if node.phase.is_some() {
            self.phase.clone_from(&node.phase);
        }
        if node.progress.is_some() {
            self.progress = node.progress;
        }
        self.sprite.clone_from(&node.sprite);
        self.at.stage = Stage::Beat(0);
    }

    /// The continuation of `node`, once its beats are played.
    fn continuation(&mut self, node: &'s Node) -> Option<Event> {
        match &node.then {
            Continuation::Ending(ending) => {
                let event = Event::Ending {
                    id: ending.id.clone(),
                    text: self.fill(&ending.prose),
                };
                self.at.stage = Stage::Ended;
                self.ending = Some(event.clone());
                Some(event)
            }
            Continuation::Fork(fork) => {
                self.at.stage = Stage::Asked;
                Some(Event::Ask {
                    key: format!("fork:{}", node.id),
                    question: self.fill(&fork.question),
                    options: fork
                        .options
                        .iter()
                        .map(|o| Choice {
                            id: o.id.clone(),
                            label: self.fill(&o.label),
                        })
                        .collect(),
                    timeout: fork.timeout_ms.map(Duration::from_millis),
                })
            }
            Continuation::Roll(_) => {
                self.at.stage = Stage::Rolled;
                let key = self.key(&format!("roll:{}", node.id));
                let draw = prng::draw(self.seed, &key);
                Some(Event::Roll { key, draw })
            }
            Continuation::Next { goto } => {
                self.goto(goto);
                None
            }
            Continuation::Return => {
                // Validation keeps `return` off the main line; there it would end nothing.
                if let Some(side) = self.side.take() {
                    self.at = side.resume;
                }
                None
            }
        }
    }

    /// Follows the answer to the fork of `node`.
    fn answer_fork(&mut self, node: &'s Node, answer: Option<Answer>) {
        let Continuation::Fork(fork) = &node.then else {
            return;
        };
        let chosen = match answer {
            Some(Answer::Choice(id)) => fork.options.iter().find(|o| o.id == id),
            _ => None,
        };
        match (chosen, &fork.fallback) {
            (Some(option), _) => {
                self.apply(&option.effects);
                self.goto(&option.goto);
            }
            (None, Some(fallback)) => self.goto(fallback),
            (None, None) => {
                let first = &fork.options[0];
                self.apply(&first.effects);
                self.goto(&first.goto);
            }
        }
    }

    /// Follows the draw for the roll of `node`: effects, then the branch's beat if any.
    fn answer_roll(&mut self, node: &'s Node, answer: Option<Answer>) -> Option<Event> {
        let Continuation::Roll(roll) = &node.then else {
            return None;
        };
        let draw = match answer {
            Some(Answer::Draw(draw)) => draw,
            _ => prng::draw(self.seed, &self.key(&format!("roll:{}", node.id))),
        };
        let weights: Vec<u32> = roll.branches.iter().map(|b| b.weight).collect();
        let index = prng::pick(&weights, draw).unwrap_or(0);
        let branch = &roll.branches[index];
        self.apply(&branch.effects);
        match &branch.beat {
            Some(beat) => {
                self.sprite = None;
                self.at.stage = Stage::RollPause(index);
                Some(self.beat(beat))
            }
            None => {
                self.at.stage = Stage::RollGoto(index);
                None
            }
        }
    }

    fn goto(&mut self, id: &str) {
        self.at = Position {
            node: self.story.node(id),
            stage: Stage::Enter,
        };
    }

    fn apply(&mut self, effects: &Effects) {
        for (name, change) in effects {
            *self.resources.entry(name.clone()).or_insert(0) += change;
        }
    }

    fn resource(&self, name: &str) -> i64 {
        self.resources.get(name).copied().unwrap_or(0)
    }

    /// A beat event with the current pictures; the sprite goes with the first one only.
    fn beat(&mut self, text: &str) -> Event {
        let actions = match (&self.side, self.story.actions.is_empty()) {
            (None, false) => Some(ActionSet {
                key: self.offer_key(),
                options: self.action_choices(),
            }),
            _ => None,
        };
        Event::Beat {
            text: self.fill(text),
            meta: BeatMeta {
                scene: self.scene.clone(),
                sprite: self.sprite.take(),
                phase: self.phase.clone(),
                progress: self.progress,
                actions,
            },
        }
    }

    /// The pause after a beat of `node` under `key`, unless it lasts 0.
    fn pause(&self, node: &Node, key: String) -> Option<Event> {
        let ms = node.pause_ms.unwrap_or(self.story.pause_ms);
        (ms > 0).then(|| Event::Pause {
            key,
            duration: Duration::from_millis(ms),
        })
    }

    /// A new offer of the standing actions, if the story has any.
    fn offer(&mut self) -> Option<Event> {
        if self.story.actions.is_empty() {
            return None;
        }
        self.offers += 1;
        Some(Event::Offer {
            key: self.offer_key(),
            actions: self.action_choices(),
        })
    }

    fn offer_key(&self) -> String {
        format!("actions-{}", self.offers)
    }

    fn action_choices(&self) -> Vec<ActionChoice> {
        let actions = self.story.actions.iter();
        actions
            .map(|a| ActionChoice {
                id: a.id.clone(),
                label: self.fill(&a.label),
            })
            .collect()
    }

    /// `base` with the current side story's prefix, if any.
    fn key(&self, base: &str) -> String {
        match &self.side {
            Some(side) => format!("{}{base}", side.prefix),
            None => base.to_owned(),
        }
    }

    fn fill(&self, text: &str) -> String {
        text.replace("{name}", &self.name)
    }
}
