//! The child-task scenario both hosts run, over the conformance fixtures' `gallery` (one
//! `thumbnail` child per width) and a client: what a client sees of a parent and its children.
use serde_json::{Value, json};

use crate::mcp::McpClient;

/// A started `gallery`: the parent's id and its children's, in start order.
#[derive(Debug)]
pub struct Gallery {
    /// The parent task.
    pub parent: String,
    /// The `thumbnail` children (`thumb`, `thumb#2`, ...).
    pub children: Vec<String>,
}

/// Creates a `gallery` of `widths`, each thumbnail taking `seconds`, and waits until it has
/// started them all (and published their ids). Each child is a task the client sees, of the `thumbnail` tool, naming the
/// parent among its related tasks.
pub fn start_gallery(client: &McpClient, widths: &[u64], seconds: u64) -> Gallery {
    let created = client.result(
        "tools/call",
        json!({ "name": "gallery", "arguments": { "widths": widths, "seconds": seconds } }),
    );
    let parent = created["taskId"].as_str().expect("taskId").to_owned();
    let started = format!("started {}", widths.len());
    let task = wait_for(client, &parent, |task| task["statusMessage"] == started);
    let children: Vec<String> =
        serde_json::from_value(task["_meta"]["io.durable-mcp-server/status"]["children"].clone())
            .unwrap_or_else(|e| panic!("the children's ids: {e}: {task}"));
    assert_eq!(children.len(), widths.len(), "{task}");
    for child in &children {
        let task = client.result("tasks/get", json!({ "taskId": child }));
        assert_eq!(
            task["_meta"]["io.modelcontextprotocol/relatedTaskIds"],
            json!([parent]),
            "{task}"
        );
    }
    Gallery { parent, children }
}

/// Starts a `gallery` of two long thumbnails, cancels it, and checks that both children are
/// cancelled by the time the parent shows `cancelled`.
pub fn cancelling_the_parent_cancels_the_children(client: &McpClient) {
    let gallery = start_gallery(client, &[1, 2], 3600);
    client.result("tasks/cancel", json!({ "taskId": gallery.parent }));
    wait_for_status(client, &gallery.parent, "cancelled");
    for child in &gallery.children {
        let task = client.result("tasks/get", json!({ "taskId": child }));
        assert_eq!(task["status"], "cancelled", "{task}");
    }
}

/// Polls `tasks/get` of `id` until `ready` says the task is what is awaited, and returns it;
/// 60 s at most.
pub fn wait_for(client: &McpClient, id: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let read = || client.result("tasks/get", json!({ "taskId": id }));
    crate::wait::until(&format!("task {id}"), read, ready)
}

/// Waits until the task `id` has the status `status`.
pub fn wait_for_status(client: &McpClient, id: &str, status: &str) -> Value {
    wait_for(client, id, |task| task["status"] == status)
}

/// The text of a completed task's result.
pub fn result_text(task: &Value) -> &str {
    task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {task}"))
}
