//! The stories' MCP resources: per story a manifest (`application/json`) and its scenes and
//! sprites (`image/svg+xml`, self-contained and checked safe to inline when the story loads).

use durable_mcp::McpServer;
use durable_mcp::wire::{Resource, ResourceContents};
use serde_json::json;

use crate::shelf;
use crate::story::ValidStory;
use crate::uri;

const SVG: &str = "image/svg+xml";
const JSON: &str = "application/json";

/// Adds every shipped story's resources to `server`.
pub fn add_all(server: McpServer) -> McpServer {
    shelf::stories().iter().fold(server, add_story)
}

fn add_story(server: McpServer, story: &'static ValidStory) -> McpServer {
    let manifest = Resource::new(uri::manifest(&story.id), format!("{}/manifest", story.id))
        .description(format!(
            "Story manifest of \"{}\": {}",
            story.title, story.blurb
        ))
        .mime_type(JSON);
    let server = add(server, manifest, manifest_json(story));
    let scenes = story.scenes.iter().map(|(id, svg)| {
        let described = format!("{}: scene {id}", story.title);
        (
            uri::scene(&story.id, id),
            format!("{}/scenes/{id}", story.id),
            described,
            svg,
        )
    });
    let sprites = story.sprites.iter().map(|(id, svg)| {
        let described = format!("{}: sprite {id}", story.title);
        (
            uri::sprite(&story.id, id),
            format!("{}/sprites/{id}", story.id),
            described,
            svg,
        )
    });
    scenes
        .chain(sprites)
        .fold(server, |server, (uri, name, description, svg)| {
            let resource = Resource::new(uri, name)
                .description(description)
                .mime_type(SVG);
            add(server, resource, svg.clone())
        })
}

/// Adds a resource whose contents are always `text`.
fn add(server: McpServer, resource: Resource, text: String) -> McpServer {
    let mime_type = resource.mime_type.clone();
    server.resource(resource, move |uri| {
        let contents = ResourceContents::text(uri, mime_type.as_deref(), text.clone());
        async move { Ok(vec![contents]) }
    })
}

/// What a page needs to offer and draw a story before it starts.
fn manifest_json(story: &ValidStory) -> String {
    let actions: Vec<_> = story
        .actions
        .iter()
        .map(|action| json!({ "id": action.id, "label": action.label }))
        .collect();
    let phases: Vec<_> = story
        .phases
        .iter()
        .map(|phase| json!({ "id": phase.id, "label": phase.label }))
        .collect();
    json!({
        "id": story.id,
        "title": story.title,
        "blurb": story.blurb,
        "defaultName": story.default_name,
        "phases": phases,
        "defaultScene": uri::scene(&story.id, &story.default_scene),
        "actions": actions,
        "scenes": story.scenes.keys().map(|id| uri::scene(&story.id, id)).collect::<Vec<_>>(),
        "sprites": story.sprites.keys().map(|id| uri::sprite(&story.id, id)).collect::<Vec<_>>(),
    })
    .to_string()
}
