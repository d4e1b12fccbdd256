//! Walks through the fixture story: the event stream, its keys, forks (answered, timed out,
//! answered wrongly), rolls, gates and standing actions, and determinism.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use story_demo::FIXTURE_JSON;
use story_demo::story::{Answer, Event, ValidStory, Walk, load};

fn fixture() -> ValidStory {
    load(FIXTURE_JSON).unwrap_or_else(|e| panic!("{e}"))
}

/// How the test answers: fork key → answer, check key → action; rolls get back their draw
/// unless `draws` names one.
#[derive(Default)]
struct Player {
    forks: BTreeMap<&'static str, Answer>,
    actions: BTreeMap<&'static str, &'static str>,
    draws: BTreeMap<&'static str, u64>,
}

impl Player {
    fn choose(mut self, fork: &'static str, option: &str) -> Self {
        self.forks.insert(fork, Answer::Choice(option.to_owned()));
        self
    }

    fn time_out(mut self, fork: &'static str) -> Self {
        self.forks.insert(fork, Answer::TimedOut);
        self
    }

    fn press(mut self, check: &'static str, action: &'static str) -> Self {
        self.actions.insert(check, action);
        self
    }

    fn draw(mut self, roll: &'static str, draw: u64) -> Self {
        self.draws.insert(roll, draw);
        self
    }

    fn answer(&self, event: &Event) -> Option<Answer> {
        match event {
            Event::Ask { key, .. } => self.forks.get(key.as_str()).cloned(),
            Event::Check { key, .. } => {
                let action = self.actions.get(key.as_str())?;
                Some(Answer::Action((*action).to_owned()))
            }
            Event::Roll { key, draw } => Some(Answer::Draw(
                self.draws.get(key.as_str()).copied().unwrap_or(*draw),
            )),
            _ => None,
        }
    }
}

/// Every event of a walk to its ending.
fn play(story: &ValidStory, seed: u64, player: &Player) -> Vec<Event> {
    let mut walk = Walk::new(story, "Ada", seed);
    let mut events = Vec::new();
    let mut reply = None;
    for _ in 0..1_000 {
        let event = walk.next(reply.take());
        reply = player.answer(&event);
        let over = matches!(event, Event::Ending { .. });
        events.push(event);
        if over {
            // The walk stays over.
            assert_eq!(walk.next(None), *events.last().unwrap());
            return events;
        }
    }
    panic!("no ending after 1000 events: {events:#?}");
}

/// A one-line summary of each event.
fn summary(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|event| match event {
            Event::Beat { text, .. } => format!("beat {text}"),
            Event::Pause { key, duration } => format!("pause {key} {}ms", duration.as_millis()),
            Event::Ask { key, .. } => format!("ask {key}"),
            Event::Roll { key, .. } => format!("roll {key}"),
            Event::Offer { key, .. } => format!("offer {key}"),
            Event::Check { key, offer } => format!("check {key} {offer}"),
            Event::Ending { id, text } => format!("ending {id}: {text}"),
        })
        .collect()
}

fn ending(events: &[Event]) -> &str {
    match events.last() {
        Some(Event::Ending { id, .. }) => id,
        other => panic!("not an ending: {other:?}"),
    }
}

/// The journal keys of a walk, in order.
fn keys(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Pause { key, .. }
            | Event::Ask { key, .. }
            | Event::Roll { key, .. }
            | Event::Offer { key, .. }
            | Event::Check { key, .. } => Some(key.as_str()),
            Event::Beat { .. } | Event::Ending { .. } => None,
        })
        .collect()
}

#[test]
fn a_fork_path_plays_every_event_in_order() {
    let story = fixture();
    let player = Player::default()
        .choose("fork:trailhead", "ridge")
        .draw("roll:ridge", 0);
    let events = play(&story, 7, &player);
    assert_eq!(
        summary(&events),
        [
            "offer actions-1",
            "beat Ada shoulders the pack at the trailhead.",
            "pause pause:trailhead:0 50ms",
            "check check:trailhead:0 actions-1",
            "beat The wash runs dry and white ahead.",
            "pause pause:trailhead:1 50ms",
            "check check:trailhead:1 actions-1",
            "ask fork:trailhead",
            "beat A hawk turns above the ridge.",
            "pause pause:ridge:0 50ms",
            "check check:ridge:0 actions-1",
            "roll roll:ridge",
            "beat Something glints below.",
            "pause pause:ridge:roll 50ms",
            "beat A spring seeps from the rock; Ada fills the bottle.",
            "pause pause:spring:0 50ms",
            "check check:spring:0 actions-1",
            "beat Ada climbs the mesa with water to spare.",
            "pause pause:mesa:0 50ms",
            "check check:mesa:0 actions-1",
            "ending home: Ada made it across.",
        ]
    );
}

#[test]
fn beats_carry_the_pictures_and_the_sprite_only_once() {
    let story = fixture();
    let player = Player::default()
        .choose("fork:trailhead", "ridge")
        .draw("roll:ridge", 0);
    let events = play(&story, 7, &player);
    let metas: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::Beat { meta, .. } => Some(meta),
            _ => None,
        })
        .collect();
    assert_eq!(metas[0].scene, "dunes");
    assert_eq!(metas[0].phase.as_deref(), Some("setting-out"));
    assert_eq!(metas[0].progress, Some(0));
    let actions = metas[0].actions.as_ref().expect("the standing actions");
    assert_eq!(actions.key, "actions-1");
    assert_eq!(actions.options[0].id, "read-map");
    // The ridge's first beat shows the hawk; the roll's beat does not.
    assert_eq!(metas[2].sprite.as_deref(), Some("hawk"));
    assert_eq!(metas[2].phase.as_deref(), Some("crossing"));
    assert_eq!(metas[3].sprite, None);
    let last = metas.last().unwrap();
    assert_eq!((last.scene.as_str(), last.progress), ("mesa", Some(100)));
    let json = serde_json::to_value(metas[3]).unwrap();
    assert!(json.get("sprite").is_none(), "{json}");
}

#[test]
fn a_timed_out_fork_takes_its_fallback_and_the_gate_turns_the_player_back() {
    let story = fixture();
    let player = Player::default()
        .choose("fork:trailhead", "wash")
        .time_out("fork:wash");
    let events = play(&story, 7, &player);
    let ask = events
        .iter()
        .find(|e| matches!(e, Event::Ask { key, .. } if key == "fork:wash"))
        .unwrap();
    let Event::Ask {
        question,
        options,
        timeout,
        ..
    } = ask
    else {
        unreachable!()
    };
    assert_eq!(question, "Flash flood! Climb or run?");
    assert_eq!(options.len(), 2);
    assert_eq!(*timeout, Some(Duration::from_millis(200)));
    let lines = summary(&events);
    assert!(lines.contains(&"beat The water decides for Ada.".to_owned()));
    // The wash has `pause_ms: 0`: no pause after its beat, but still a check.
    assert!(!keys(&events).contains(&"pause:wash:0"));
    assert!(keys(&events).contains(&"check:wash:0"));
    // Water 2, minus 1 for the wash: below the mesa's gate of 2, so the mesa is skipped.
    assert!(!lines.iter().any(|l| l.contains("mesa with water")));
    assert_eq!(ending(&events), "dry");
}

#[test]
fn an_answered_timed_fork_goes_where_the_player_chose_and_the_gate_lets_them_through() {
    let story = fixture();
    let player = Player::default()
        .choose("fork:trailhead", "wash")
        .choose("fork:wash", "run");
    let events = play(&story, 7, &player);
    // Water 2 - 1 (the wash) + 1 (the spring): the gate's minimum.
    assert_eq!(ending(&events), "home");
}

#[test]
fn an_unknown_answer_to_an_untimed_fork_takes_the_first_option() {
    let story = fixture();
    let player = Player::default().choose("fork:trailhead", "fly");
    let events = play(&story, 7, &player);
    assert!(summary(&events).contains(&"beat A hawk turns above the ridge.".to_owned()));
    let unanswered = play(&story, 7, &Player::default());
    assert_eq!(summary(&events), summary(&unanswered));
}

#[test]
fn a_standing_action_plays_its_side_story_and_the_main_line_goes_on() {
    let story = fixture();
    let player = Player::default()
        .press("check:trailhead:0", "read-map")
        .draw("a1:roll:map-unfold", 0)
        .choose("fork:trailhead", "ridge")
        .draw("roll:ridge", u64::MAX);
    let events = play(&story, 7, &player);
    let lines = summary(&events);
    assert_eq!(
        lines[3..15],
        [
            "check check:trailhead:0 actions-1",
            "beat Ada unfolds the map against the wind.",
            "pause a1:pause:map-unfold:0 50ms",
            "roll a1:roll:map-unfold",
            "beat A gust nearly takes it.",
            "pause a1:pause:map-unfold:roll 50ms",
            "beat The wash bends twice before the mesa.",
            "pause a1:pause:map-fold:0 50ms",
            "offer actions-2",
            "beat The wash runs dry and white ahead.",
            "pause pause:trailhead:1 50ms",
            "check check:trailhead:1 actions-2",
        ]
    );
    // Side-story beats do not offer the actions; the main line's do, under the new key.
    let side_beat = &events[4];
    assert!(matches!(side_beat, Event::Beat { meta, .. } if meta.actions.is_none()));
    let after = &events[12];
    assert!(
        matches!(after, Event::Beat { meta, .. } if meta.actions.as_ref().unwrap().key == "actions-2")
    );
    // The draw of u64::MAX picks the roll's second branch: straight to the mesa.
    assert!(!lines.iter().any(|l| l.contains("glints")));
    assert_eq!(ending(&events), "home");
}

#[test]
fn an_answer_naming_no_action_renews_the_offer() {
    let story = fixture();
    let player = Player::default().press("check:trailhead:0", "dance");
    let lines = summary(&play(&story, 7, &player));
    assert_eq!(lines[4], "offer actions-2");
    assert_eq!(lines[5], "beat The wash runs dry and white ahead.");
}

#[test]
fn keys_are_unique_even_when_actions_are_taken_at_every_check() {
    let story = fixture();
    let mut player = Player::default()
        .choose("fork:trailhead", "ridge")
        .draw("roll:ridge", 0);
    for check in [
        "check:trailhead:0",
        "check:trailhead:1",
        "check:ridge:0",
        "check:spring:0",
        "check:mesa:0",
    ] {
        player = player.press(check, "read-map");
    }
    let events = play(&story, 7, &player);
    let keys = keys(&events);
    let unique: BTreeSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "{keys:#?}");
    assert!(keys.contains(&"a5:pause:map-fold:0"));
    assert!(keys.contains(&"a5:roll:map-unfold"));
    assert!(keys.contains(&"actions-6"));
    assert!(keys.iter().all(|k| !k.contains('#')));
}

#[test]
fn the_same_seed_and_answers_tell_the_same_story() {
    let story = fixture();
    let player = Player::default()
        .choose("fork:trailhead", "ridge")
        .press("check:ridge:0", "read-map");
    for seed in [0, 1, 42, u64::MAX] {
        assert_eq!(play(&story, seed, &player), play(&story, seed, &player));
    }
}

#[test]
fn different_seeds_can_draw_different_branches() {
    let story = fixture();
    let player = Player::default().choose("fork:trailhead", "ridge");
    let glints = |seed| {
        summary(&play(&story, seed, &player))
            .iter()
            .any(|line| line.contains("glints"))
    };
    let outcomes: BTreeSet<bool> = (0..32).map(glints).collect();
    assert_eq!(outcomes.len(), 2, "32 seeds should reach both branches");
}

#[test]
fn the_journaled_draw_decides_over_the_walks_own() {
    let story = fixture();
    let player = Player::default().choose("fork:trailhead", "ridge");
    let events = play(&story, 3, &player);
    let Some(Event::Roll { draw, .. }) = events.iter().find(|e| matches!(e, Event::Roll { .. }))
    else {
        panic!("no roll");
    };
    // The proposed draw is a pure function of seed and key.
    assert_eq!(*draw, story_demo::story::prng::draw(3, "roll:ridge"));
    for journaled in [0, u64::MAX] {
        let replayed = play(
            &story,
            3,
            &Player::default()
                .choose("fork:trailhead", "ridge")
                .draw("roll:ridge", journaled),
        );
        let glints = summary(&replayed).iter().any(|l| l.contains("glints"));
        assert_eq!(glints, journaled == 0);
    }
}
