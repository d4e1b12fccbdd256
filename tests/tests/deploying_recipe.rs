//! The Durable Object recipe of `docs/deploying.md` ("Without the macro"), which cannot run as
//! a native doctest: the page's block must be the test Worker `tests/worker-recipe`'s
//! `src/lib.rs`, that crate must compile for wasm32, and, under workerd (`wrangler dev`), a
//! task created through its endpoint must run in the hand-written object to completion.

use std::process::{Command, Stdio};

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::{
    WorkerProcess, build_worker_once, one_worker_at_a_time, workspace_root,
};
use serde_json::json;

/// The Worker crate, relative to the workspace root.
const WORKER_CRATE: &str = "tests/worker-recipe";

/// A line of the page's recipe block that no other block of the page has.
const RECIPE_MARK: &str = "#[wasm_bindgen(js_name = durableMcpCall)]";

/// The code blocks of a Markdown text, without their fences.
fn code_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut current, fence) {
            (None, true) => current = Some(Vec::new()),
            (Some(lines), true) => {
                blocks.push(lines.join("\n"));
                current = None;
            }
            (Some(lines), false) => lines.push(line),
            (None, false) => {}
        }
    }
    blocks
}

/// `text` with every run of whitespace made one space.
fn normalised(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_page_shows_the_recipe_crate() {
    let root = workspace_root();
    let page = std::fs::read_to_string(root.join("docs/deploying.md")).expect("the page");
    let recipes: Vec<String> = code_blocks(&page)
        .into_iter()
        .filter(|block| block.contains(RECIPE_MARK))
        .collect();
    assert_eq!(
        recipes.len(),
        1,
        "docs/deploying.md must show the recipe in exactly one block"
    );
    let source = std::fs::read_to_string(root.join(WORKER_CRATE).join("src/lib.rs"))
        .expect("the recipe crate's source");
    assert_eq!(
        normalised(&recipes[0]),
        normalised(&source),
        "the recipe block of docs/deploying.md differs from {WORKER_CRATE}/src/lib.rs: \
         change both"
    );
}

#[test]
fn the_recipe_compiles_for_wasm32() {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "check",
            "--target",
            "wasm32-unknown-unknown",
            "--manifest-path",
        ])
        .arg(root.join(WORKER_CRATE).join("Cargo.toml"))
        // The Worker tests' target directory: not the one `cargo test` holds.
        .env("CARGO_TARGET_DIR", root.join("target/workers"))
        // cargo's probe of rustc (`rustc -`) reads standard input: an inherited pipe with text
        // in it fails the probe, and cargo caches the failure in the target directory.
        .stdin(Stdio::null())
        .output()
        .expect("run cargo check");
    assert!(
        output.status.success(),
        "the recipe of docs/deploying.md does not compile for wasm32:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Under workerd, the Worker reaches the hand-written object: a task tool's call creates the
/// task in it, and the task runs there (its alarm) to completion.
#[test]
fn the_recipe_runs_a_task_under_workerd() {
    let _one = one_worker_at_a_time();
    let dir = build_worker_once(WORKER_CRATE);
    let state = tempfile::tempdir().unwrap();
    let worker = WorkerProcess::start(&dir, state.path());
    let client = McpClient::new(&worker.mcp_url());

    let echoed = client.result(
        "tools/call",
        json!({ "name": "echo", "arguments": { "a": 1 } }),
    );
    assert_eq!(echoed["content"][0]["text"], r#"{"a":1}"#, "{echoed}");

    assert_eq!(client.run_task("pause"), "paused");
}
