//! The `start` task: tells one story as a durable task, mapping each event of the
//! [walk](crate::story::walk) onto a task operation (see the table there). Every answer the
//! walk is fed comes from the journal, so a replay retells the same story and publishes
//! nothing it published before.

use durable_mcp::format_duration;
use durable_mcp::{ElicitOutcome, TaskContext, TaskError, mcp_task};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use crate::shelf;
use crate::story::{
    ActionChoice, ActionSet, Answer, BeatMeta, Choice, Event, ValidStory, Walk, prng,
};
use crate::trail::{Entry, Kind, Trail};
use crate::uri;

/// The `_meta` key of a fork request's machine-readable form (question, options, timeout).
pub const FORK_META: &str = "io.durable-mcp-server/fork";

/// The longest player name, in characters.
pub const MAX_NAME_CHARS: usize = 80;

/// What `start` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// The story's id: one of the ids in `resources/list` (`story://<id>/manifest`).
    #[serde(deserialize_with = "known_story")]
    pub story: String,
    /// The player's name (at most 80 characters); the story's default name when absent.
    #[serde(default, deserialize_with = "player_name")]
    #[schemars(length(max = 80))]
    pub name: Option<String>,
    /// The seed of the story's random branches: the same seed and answers tell the same
    /// story. Derived from the task's id when absent.
    #[serde(default)]
    pub seed: Option<u64>,
}

fn known_story<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let id = String::deserialize(deserializer)?;
    if shelf::find(&id).is_none() {
        return Err(serde::de::Error::custom(format_args!(
            "unknown story {id:?}; known stories: {}",
            shelf::known_ids()
        )));
    }
    Ok(id)
}

fn player_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let Some(name) = Option::<String>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let name = name.trim();
    if name.chars().count() > MAX_NAME_CHARS || name.contains(char::is_control) {
        return Err(serde::de::Error::custom(format_args!(
            "`name` must be at most {MAX_NAME_CHARS} characters without control characters"
        )));
    }
    Ok((!name.is_empty()).then(|| name.to_owned()))
}

/// Starts a story: a long-running durable task that tells it beat by beat (poll `tasks/get`:
/// the status message is the current line, `_meta["io.durable-mcp-server/status"]` the
/// scene, sprite, phase, progress, standing actions and recent trail), pauses at forks to ask
/// the player (`inputRequests`, answer with `tasks/update`), and takes standing actions at
/// any time. Cancel it to abandon the story. Pick a story id from `resources/list`.
#[mcp_task(title = "Start a story", poll_interval = "1s")]
pub async fn start(cx: &TaskContext, input: Start) -> Result<String, TaskError> {
    let story = shelf::find(&input.story)
        .ok_or_else(|| TaskError::failed(format!("the story {:?} is gone", input.story)))?;
    let name = input.name.unwrap_or_else(|| story.default_name.clone());
    // Task ids are random, so each play-through gets its own rolls; the id never changes,
    // so replays draw the same ones.
    let seed = input.seed.unwrap_or_else(|| prng::fnv1a(cx.task_id()));
    Teller {
        cx,
        story,
        trail: Trail::default(),
        meta: None,
    }
    .tell(Walk::new(story, &name, seed))
    .await
}

/// Performs a walk's events as task operations.
struct Teller<'a> {
    cx: &'a TaskContext,
    story: &'a ValidStory,
    trail: Trail,
    /// The picture state of the last beat, republished with the ending.
    meta: Option<BeatMeta>,
}

impl Teller<'_> {
    async fn tell(mut self, mut walk: Walk<'_>) -> Result<String, TaskError> {
        let mut answer = None;
        loop {
            answer = match walk.next(answer) {
                Event::Beat { text, meta } => {
                    self.trail.push(Kind::Beat, text.clone());
                    self.publish(text, &meta).await?;
                    self.meta = Some(meta);
                    None
                }
                Event::Pause { key, duration } => {
                    self.cx.sleep(&key, duration).await?;
                    self.trail
                        .push(Kind::Pause, format!("paused {}", format_duration(duration)));
                    None
                }
                Event::Ask {
                    key,
                    question,
                    options,
                    timeout,
                } => Some(self.ask(&key, &question, &options, timeout).await?),
                Event::Roll { key, draw } => {
                    // The walk's draw is journaled, so a replay reads the same one.
                    let drawn: u64 = self.cx.step(&key, move || async move { Ok(draw) }).await?;
                    self.trail
                        .push(Kind::Roll, format!("chance decides ({key})"));
                    Some(Answer::Draw(drawn))
                }
                Event::Offer { key, actions } => {
                    self.cx.offer(&key, offer_request(&actions)).await?;
                    None
                }
                Event::Check { key, offer } => {
                    let taken = self.cx.check_input(&key, &offer).await?;
                    taken.map(|response| self.action(&response))
                }
                Event::Ending { id, text } => {
                    self.trail.push(Kind::Ending, format!("ending: {id}"));
                    let meta = self.meta.take().unwrap_or_default();
                    self.publish(
                        text.clone(),
                        &BeatMeta {
                            actions: None,
                            sprite: None,
                            ..meta
                        },
                    )
                    .await?;
                    return Ok(format!("[ending:{id}] {text}"));
                }
            };
        }
    }

    /// Publishes `text` with the picture state and the trail.
    async fn publish(&self, text: String, meta: &BeatMeta) -> Result<(), TaskError> {
        let story = self.story.id.as_str();
        let status = StatusMeta {
            story,
            scene: uri::scene(story, &meta.scene),
            sprite: meta
                .sprite
                .as_deref()
                .map(|sprite| uri::sprite(story, sprite)),
            phase: meta.phase.as_deref(),
            progress: meta.progress,
            actions: meta.actions.as_ref(),
            trail: self.trail.entries().collect(),
        };
        self.cx.status(text).meta(&status).await
    }

    /// Puts a fork to the player; what they chose, or [`Answer::TimedOut`].
    async fn ask(
        &mut self,
        key: &str,
        question: &str,
        options: &[Choice],
        timeout: Option<std::time::Duration>,
    ) -> Result<Answer, TaskError> {
        self.trail.push(Kind::Fork, question);
        let request = fork_request(question, options, timeout);
        let response = match timeout {
            None => Some(self.cx.elicit(key, request).await?),
            Some(timeout) => match self.cx.elicit(key, request).timeout(timeout).await? {
                ElicitOutcome::Answered(response) => Some(response),
                ElicitOutcome::TimedOut => None,
            },
        };
        let chosen = response.as_ref().and_then(|response| {
            let id = accepted(response, "choice")?;
            options.iter().find(|option| option.id == id)
        });
        Ok(match chosen {
            Some(option) => {
                self.trail
                    .push(Kind::Answer, format!("chose: {}", option.label));
                Answer::Choice(option.id.clone())
            }
            None => {
                let why = if response.is_some() {
                    "no choice made"
                } else {
                    "no answer in time"
                };
                self.trail
                    .push(Kind::Timeout, format!("{why}: fate decides"));
                Answer::TimedOut
            }
        })
    }

    /// The standing action a check found (any answer takes the offer, so it is made again).
    fn action(&mut self, response: &Value) -> Answer {
        let id = accepted(response, "action").unwrap_or_default();
        let action = self.story.actions.iter().find(|action| action.id == id);
        let entry = match action {
            Some(action) => format!("took the action: {}", action.label),
            None => format!("an answer naming no action ({id:?}): the actions are offered again"),
        };
        self.trail.push(Kind::Action, entry);
        Answer::Action(id.to_owned())
    }
}

/// `content.<field>` of an accepted elicitation response.
fn accepted<'v>(response: &'v Value, field: &str) -> Option<&'v str> {
    (response["action"] == "accept")
        .then(|| response["content"][field].as_str())
        .flatten()
}

/// The status meta object of a beat: what a page needs to draw it.
#[derive(Serialize)]
struct StatusMeta<'a> {
    story: &'a str,
    scene: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sprite: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    progress: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    actions: Option<&'a ActionSet>,
    trail: Vec<&'a Entry>,
}

/// The elicitation a fork asks: a form with one `choice` among the option ids, the options
/// listed in the message for clients that show only the message, and the question, options
/// and timeout under `_meta` for pages that draw their own panel.
fn fork_request(question: &str, options: &[Choice], timeout: Option<std::time::Duration>) -> Value {
    let mut message = question.to_owned();
    for option in options {
        message.push_str(&format!("\n- {}: {}", option.id, option.label));
    }
    if let Some(timeout) = timeout {
        message.push_str(&format!("\nYou have {}.", format_duration(timeout)));
    }
    let ids: Vec<&str> = options.iter().map(|option| option.id.as_str()).collect();
    let mut fork = json!({ "question": question, "options": options });
    if let Some(timeout) = timeout {
        fork["timeoutMs"] = json!(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
    }
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { "choice": { "type": "string", "title": "Your choice", "enum": ids } },
            "required": ["choice"],
        },
        "_meta": { FORK_META: fork },
    })
}

/// The standing offer: answer it with `{"action": "<id>"}` at any time.
fn offer_request(actions: &[ActionChoice]) -> Value {
    let mut message = "Standing actions: answer at any time.".to_owned();
    for action in actions {
        message.push_str(&format!("\n- {}: {}", action.id, action.label));
    }
    let ids: Vec<&str> = actions.iter().map(|action| action.id.as_str()).collect();
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { "action": { "type": "string", "title": "Action", "enum": ids } },
            "required": ["action"],
        },
    })
}
