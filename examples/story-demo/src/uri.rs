//! The URIs of a story's resources: `story://<id>/manifest`, `story://<id>/scenes/<scene>`
//! and `story://<id>/sprites/<sprite>`.

/// The manifest of story `story`.
pub fn manifest(story: &str) -> String {
    format!("story://{story}/manifest")
}

/// Scene `scene` of story `story`.
pub fn scene(story: &str, scene: &str) -> String {
    format!("story://{story}/scenes/{scene}")
}

/// Sprite `sprite` of story `story`.
pub fn sprite(story: &str, sprite: &str) -> String {
    format!("story://{story}/sprites/{sprite}")
}
