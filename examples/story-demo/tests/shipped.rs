//! The stories the demo ships: each one loads, and the two full stories are of the promised
//! size (at least 40 nodes, 8 forks of which 2 are timed, 5 rolls, 4 endings and 8 scenes).

use story_demo::STORIES;
use story_demo::story::format::Continuation;
use story_demo::story::{ValidStory, load};

fn loaded(id: &str, json: &str) -> ValidStory {
    let story = load(json).unwrap_or_else(|e| panic!("story {id}: {e}"));
    assert_eq!(story.id, id, "the registry's id is the story's own");
    story
}

#[test]
fn every_shipped_story_loads() {
    for (id, json) in STORIES {
        loaded(id, json);
    }
}

#[test]
fn each_full_story_has_the_promised_size() {
    for (id, json) in STORIES.iter().filter(|(id, _)| *id != "fixture") {
        let story = loaded(id, json);
        let count = |test: fn(&Continuation) -> bool| {
            story.nodes.iter().filter(|node| test(&node.then)).count()
        };
        let forks = count(|then| matches!(then, Continuation::Fork(_)));
        let timed =
            count(|then| matches!(then, Continuation::Fork(fork) if fork.timeout_ms.is_some()));
        let rolls = count(|then| matches!(then, Continuation::Roll(_)));
        let endings = count(|then| matches!(then, Continuation::Ending(_)));
        let size = (
            story.nodes.len(),
            forks,
            timed,
            rolls,
            endings,
            story.scenes.len(),
        );
        assert!(
            size.0 >= 40 && forks >= 8 && timed >= 2 && rolls >= 5 && endings >= 4 && size.5 >= 8,
            "story {id}: (nodes, forks, timed forks, rolls, endings, scenes) = {size:?}, \
             wanted at least (40, 8, 2, 5, 4, 8)"
        );
    }
}
