//! `story-demo`: interactive stories told by a durable task, with a web page to play them;
//! natively and as a Cloudflare Worker from the same source.
//!
//! A story is data: a JSON file under `stories/` (see [`story::format`]), checked as a whole
//! when it is loaded ([`story::validate`]), and told by a pure, deterministic walk
//! ([`story::walk`]) whose events map one to one onto the operations of a durable task
//! (status, sleep, elicitation, journaled step, offer, input check). Because the walk reads
//! nothing but the story, the player's name, a seed and the answers fed back to it, a replay
//! that feeds back the journaled answers retells the same story.
//!
//! The MCP server ([`server`]) has one task tool, `start` (`{story, name?, seed?}`, see
//! [`play`]), and the stories' manifests, scenes and sprites as resources ([`resources`]).
//! Both hosts also serve the web page ([`pages`]) at `/` and `/task/<id>`.
//!
//! Natively, `cargo run -p story-demo` serves `http://127.0.0.1:8787/` (`PORT` and
//! `DURABLE_MCP_DATA` as for any native host); the process is a small supervisor that runs the
//! host as a child, so the page's restart button can kill the host mid-story and show that
//! nothing is lost. As a Worker, `examples/story-demo/wrangler.toml` deploys it.

pub mod pages;
pub mod play;
pub mod resources;
pub mod shelf;
pub mod story;
pub mod trail;
pub mod uri;

#[cfg(target_arch = "wasm32")]
mod worker;

use durable_mcp::McpServer;

/// The test fixture story (`stories/fixture.json`): a handful of nodes with short pauses, a
/// fork, a timed fork, a roll, a gate, a standing action and two endings.
pub const FIXTURE_JSON: &str = include_str!("../stories/fixture.json");

/// The stories the demo ships, as JSON: `(id, file contents)`, the fixture last.
pub const STORIES: &[(&str, &str)] = &[
    ("lighthouse", include_str!("../stories/lighthouse.json")),
    ("salvage", include_str!("../stories/salvage.json")),
    ("fixture", FIXTURE_JSON),
];

/// The demo's MCP server: the `start` task and every story's resources.
pub fn server() -> McpServer {
    let server = McpServer::new("story-demo", env!("CARGO_PKG_VERSION"))
        .instructions(
            "start tells an interactive story as a long-running task: poll it, answer its \
             forks with tasks/update, take standing actions at any time, cancel it to abandon. \
             Story ids, manifests, scenes and sprites are resources (story://<id>/manifest).",
        )
        .task(play::start);
    resources::add_all(server)
}
