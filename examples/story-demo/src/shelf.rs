//! The shipped stories, loaded and validated once per process (or Worker isolate).

use std::sync::OnceLock;

use crate::STORIES;
use crate::story::{ValidStory, load};

/// Every shipped story, in [`STORIES`] order.
///
/// # Panics
///
/// If a shipped story does not load: the tests load every one, so this is a build that was
/// never tested.
pub fn stories() -> &'static [ValidStory] {
    static SHELF: OnceLock<Vec<ValidStory>> = OnceLock::new();
    SHELF.get_or_init(|| {
        STORIES
            .iter()
            .map(|(id, json)| load(json).unwrap_or_else(|error| panic!("story {id}: {error}")))
            .collect()
    })
}

/// The story with `id`.
pub fn find(id: &str) -> Option<&'static ValidStory> {
    stories().iter().find(|story| story.id == id)
}

/// The ids of the shipped stories, for messages: `lighthouse, salvage, fixture`.
pub fn known_ids() -> String {
    STORIES
        .iter()
        .map(|(id, _)| *id)
        .collect::<Vec<_>>()
        .join(", ")
}
