//! The 2025-era shapes (revisions 2025-03-26 to 2025-11-25): the `Task` of the 2025-11-25
//! experimental tasks, and results without the fields 2026-07-28 added.

use serde::Serialize;
use serde_json::{Map, Value};

use super::tasks::{TaskStatusWire, complete_result};
use crate::core::time::duration_millis;
use crate::core::{TaskSnapshot, TaskStatus};

/// A task as 2025-11-25 shows it (`tasks/get`, `tasks/list`, `tasks/cancel`, and nested in
/// the `CreateTaskResult` of a `tools/call`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LegacyTask {
    /// The opaque id.
    pub task_id: String,
    /// The status; a tool error (`isError`) is `failed` in this revision.
    pub status: TaskStatusWire,
    /// The last status message the body published.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time, ISO 8601.
    pub created_at: String,
    /// Last visible change, ISO 8601.
    pub last_updated_at: String,
    /// Retention from creation in milliseconds; `null` keeps the task forever.
    pub ttl: Option<u64>,
    /// How often a client should poll, in milliseconds.
    pub poll_interval: u64,
}

impl LegacyTask {
    /// The 2025 view of `snapshot`.
    pub fn of(snapshot: &TaskSnapshot) -> Self {
        LegacyTask {
            task_id: snapshot.task_id.clone(),
            status: TaskStatusWire(legacy_status(snapshot)),
            status_message: snapshot.status_message.clone(),
            created_at: snapshot.created_at.to_rfc3339(),
            last_updated_at: snapshot.last_updated_at.to_rfc3339(),
            ttl: snapshot.ttl.map(duration_millis),
            poll_interval: duration_millis(snapshot.poll_interval).max(1),
        }
    }
}

/// The status 2025-11-25 shows: a task whose result is a tool error is `failed`.
pub fn legacy_status(snapshot: &TaskSnapshot) -> TaskStatus {
    let tool_error = snapshot
        .result
        .as_ref()
        .and_then(|result| result.get("isError"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match snapshot.status {
        TaskStatus::Completed if tool_error => TaskStatus::Failed,
        status => status,
    }
}

/// A task's stored result as a 2025 `CallToolResult`: an object with `content`.
pub fn call_result(result: Value) -> Value {
    strip_modern_fields(complete_result(result))
}

/// `result` without the fields the 2026-07-28 revision added to every result (`resultType`)
/// and to listings (`ttlMs`, `cacheScope`), which 2025 clients do not know.
pub fn strip_modern_fields(mut result: Value) -> Value {
    if let Value::Object(object) = &mut result {
        for field in ["resultType", "ttlMs", "cacheScope"] {
            object.remove(field);
        }
    }
    result
}

/// `{"task": <task>}`: what a `tools/call` with `params.task` answers.
pub fn create_task_result(snapshot: &TaskSnapshot) -> Value {
    let mut result = Map::new();
    result.insert(
        "task".to_owned(),
        serde_json::to_value(LegacyTask::of(snapshot)).unwrap_or_default(),
    );
    Value::Object(result)
}
