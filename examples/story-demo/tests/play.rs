//! The `start` task on the engine harness's virtual clock: full play-throughs of the fixture
//! story along a fork path with a standing action, and along a timed-out fork whose fallback
//! fails a gate; the host killed at every suspension, so that each resumption is a replay,
//! which must publish nothing again;
//! and the same seed and answers telling the same story.

use std::cell::RefCell;
use std::rc::Rc;

use durable_mcp::TaskStatus;
use durable_mcp::store::StoreError;
use durable_mcp::store::Write;
use durable_mcp::testing::{Harness, MemoryStore, ObservedStore, StoreCall, StoreObserver};
use serde_json::{Value, json};

/// Every status published so far: the message and the meta object.
type Published = Rc<RefCell<Vec<(String, Option<Value>)>>>;

/// Logs every status a store is asked to publish.
#[derive(Default)]
struct PublishLog(Published);

impl StoreObserver for PublishLog {
    fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        let StoreCall::Apply { writes, .. } = call else {
            return Ok(());
        };
        for write in writes {
            if let Write::PublishStatus { message, meta, .. } = write {
                let meta = meta
                    .as_deref()
                    .map(|meta| serde_json::from_str(meta).unwrap());
                self.0.borrow_mut().push((message.clone(), meta));
            }
        }
        Ok(())
    }
}

/// A harness over the demo's tasks, and the log of what its store published.
struct Play {
    harness: Harness,
    published: Published,
    task: String,
}

impl Play {
    /// Starts `story` for Tess with `seed` and runs it to its first suspension.
    fn start(story: &str, seed: u64) -> Play {
        let log = PublishLog::default();
        let published = Rc::clone(&log.0);
        let store = ObservedStore::new(MemoryStore::new(), log);
        let registry = story_demo::server().task_registry();
        let mut harness = Harness::with_store(registry, Rc::new(store));
        let task = harness.create(
            "start",
            json!({ "story": story, "name": "Tess", "seed": seed }),
        );
        harness.run_until_idle();
        Play {
            harness,
            published,
            task,
        }
    }

    /// Kills the host and starts it again on the same store, so that the task's next
    /// activation replays its body from the start.
    fn crash(&mut self) {
        self.harness.crash_and_restart();
        self.harness.run_until_idle();
    }

    /// Every status meta carries the trail, numbered over the whole walk, so each publish is
    /// unique: a replay that published a beat again would show as a repeat.
    fn assert_nothing_published_twice(&self) {
        let published = self.published.borrow();
        for (i, entry) in published.iter().enumerate() {
            assert!(
                !published[..i].contains(entry),
                "published twice: {entry:?}"
            );
        }
    }

    /// Moves virtual time from event to event, killing the host at each suspension so that
    /// every resumption is a replay, until the task waits for input or ends.
    fn run(&mut self) -> TaskStatus {
        loop {
            let status = self.harness.status(&self.task);
            if status != TaskStatus::Working {
                self.assert_nothing_published_twice();
                return status;
            }
            self.crash();
            let next = self
                .harness
                .next_event()
                .expect("a working task has a wake-up");
            self.harness.advance_to(next);
        }
    }

    /// The keys of the outstanding input requests.
    fn asked(&self) -> Vec<String> {
        let snapshot = self.harness.get(&self.task);
        snapshot
            .input_requests
            .into_iter()
            .map(|(key, _)| key)
            .collect()
    }

    /// Answers input requests on a freshly restarted host, as `tasks/update` does.
    fn answer(&mut self, responses: Value) {
        self.crash();
        self.harness.update(&self.task, responses);
    }

    fn result_text(&self) -> String {
        let result = self.harness.result(&self.task).expect("a result");
        result["content"][0]["text"]
            .as_str()
            .expect("a text result")
            .to_owned()
    }

    fn messages(&self) -> Vec<String> {
        self.published
            .borrow()
            .iter()
            .map(|(message, _)| message.clone())
            .collect()
    }

    /// The keys of the journal's step and input rows.
    fn journal_keys(&self) -> Vec<String> {
        let journal = self.harness.journal(&self.task);
        journal
            .steps
            .into_keys()
            .chain(journal.inputs.into_keys())
            .collect()
    }
}

fn choose(choice: &str) -> Value {
    json!({ "action": "accept", "content": { "choice": choice } })
}

fn take(action: &str) -> Value {
    json!({ "action": "accept", "content": { "action": action } })
}

#[test]
fn a_fork_path_with_a_standing_action_reaches_the_good_ending() {
    let mut play = Play::start("fixture", 7);
    assert_eq!(play.run(), TaskStatus::InputRequired);
    assert_eq!(play.asked(), ["fork:trailhead"]);
    let fork = &play.harness.get(&play.task).input_requests[0].1;
    assert_eq!(
        fork["requestedSchema"]["properties"]["choice"]["enum"],
        json!(["ridge", "wash"])
    );
    assert_eq!(
        fork["_meta"]["io.durable-mcp-server/fork"]["question"],
        "High ridge or the wash itself?"
    );

    // The action is pressed while the fork is open; the check after the next beat takes it.
    play.answer(json!({ "actions-1": take("read-map"), "fork:trailhead": choose("ridge") }));
    assert_eq!(play.run(), TaskStatus::Completed);

    assert_eq!(play.result_text(), "[ending:home] Tess made it across.");
    let messages = play.messages();
    let expected = [
        "Tess shoulders the pack at the trailhead.",
        "A hawk turns above the ridge.",
        "Tess unfolds the map against the wind.",
        "The wash bends twice before the mesa.",
        "Tess climbs the mesa with water to spare.",
        "Tess made it across.",
    ];
    let mut at = 0;
    for line in expected {
        at += messages[at..]
            .iter()
            .position(|message| message == line)
            .unwrap_or_else(|| panic!("{line:?} not published in order: {messages:?}"));
    }
    let keys = play.journal_keys();
    for key in [
        "check:ridge:0",
        "a1:roll:map-unfold",
        "roll:ridge",
        "actions-2",
    ] {
        assert!(keys.iter().any(|k| k == key), "no {key} in {keys:?}");
    }

    // The last status carries the trail of the play-through's end, numbered throughout.
    let (_, meta) = play.published.borrow().last().cloned().unwrap();
    let meta = meta.expect("the ending's status has a meta object");
    assert_eq!(meta["story"], "fixture");
    assert_eq!(meta["scene"], "story://fixture/scenes/mesa");
    let trail = meta["trail"].as_array().unwrap();
    assert_eq!(trail.last().unwrap()["text"], "ending: home");
    let seqs: Vec<u64> = trail
        .iter()
        .map(|entry| entry["seq"].as_u64().unwrap())
        .collect();
    assert!(
        seqs.windows(2).all(|pair| pair[1] == pair[0] + 1),
        "{seqs:?}"
    );
    let kinds: Vec<&str> = trail
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"action"), "{kinds:?}");
    let texts: Vec<&str> = trail
        .iter()
        .map(|entry| entry["text"].as_str().unwrap())
        .collect();
    assert!(
        texts.contains(&"took the action: Read the map"),
        "{texts:?}"
    );
}

#[test]
fn a_timed_out_fork_takes_its_fallback_and_a_gate_turns_the_ending() {
    let mut play = Play::start("fixture", 7);
    assert_eq!(play.run(), TaskStatus::InputRequired);
    play.answer(json!({ "fork:trailhead": choose("wash") }));
    assert_eq!(play.run(), TaskStatus::InputRequired);
    assert_eq!(play.asked(), ["fork:wash"]);
    let fork = &play.harness.get(&play.task).input_requests[0].1;
    assert_eq!(
        fork["_meta"]["io.durable-mcp-server/fork"]["timeoutMs"],
        200
    );

    // Nobody answers: the timeout fires at its virtual time.
    play.crash();
    play.harness.advance("250ms");
    assert_eq!(play.run(), TaskStatus::Completed);
    // Walking the wash cost water, so the mesa's gate sends the story to the dry ending.
    assert_eq!(play.result_text(), "[ending:dry] Tess turns back, parched.");
    let messages = play.messages();
    assert!(
        messages.iter().any(|m| m == "The water decides for Tess."),
        "{messages:?}"
    );
    assert!(
        !messages.iter().any(|m| m.contains("water to spare")),
        "{messages:?}"
    );
}

#[test]
fn the_same_seed_and_answers_tell_the_same_story() {
    let tell = |seed| {
        let mut play = Play::start("fixture", seed);
        play.run();
        play.answer(json!({ "fork:trailhead": choose("ridge") }));
        play.run();
        (play.result_text(), play.published.borrow().clone())
    };
    assert_eq!(tell(11), tell(11));
}

#[test]
fn every_shipped_story_starts_and_reaches_its_first_question() {
    for (id, _) in story_demo::STORIES {
        let mut play = Play::start(id, 3);
        let status = play.run();
        assert_eq!(status, TaskStatus::InputRequired, "story {id}");
        assert!(
            play.asked().iter().any(|key| key.starts_with("fork:")),
            "story {id}"
        );
        assert!(!play.messages().is_empty(), "story {id}");
    }
}
