//! The Tasks extension's shapes: the flat `CreateTaskResult` a `tools/call` answers with, and
//! the `DetailedTask` `tasks/get` returns.
//!
//! Both carry the meta object the body last published with
//! [`Status::meta`](crate::Status::meta), verbatim, as
//! `_meta: {"io.durable-mcp-server/status": <meta>}` (the key the TypeScript durable-mcp-server
//! publishes under), and no such key while there is none. The router adds its own keys
//! (`io.modelcontextprotocol/serverInfo`) to the same `_meta` object.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::jsonrpc::ErrorObject;
use super::tools::elicitation_request;
use crate::core::{TaskSnapshot, TaskStatus, time::duration_millis};

/// The `_meta` key of the status meta object a task body last published.
pub const META_STATUS: &str = "io.durable-mcp-server/status";

/// The `_meta` key, in `tasks/get`, of the code version the task was created under.
pub const META_CODE_VERSION: &str = "io.durable-mcp-server/codeVersion";

/// The `_meta` key of the tasks a task is related to: a child task's parent (the task that
/// started it).
pub const META_RELATED_TASKS: &str = "io.modelcontextprotocol/relatedTaskIds";

/// A [`TaskStatus`] written as the wire spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskStatusWire(pub TaskStatus);

impl Serialize for TaskStatusWire {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.as_str())
    }
}

/// The fields every task shape carries.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskFields {
    /// The opaque id.
    pub task_id: String,
    /// The status.
    pub status: TaskStatusWire,
    /// The last status message the body published.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time, ISO 8601.
    pub created_at: String,
    /// Last visible change, ISO 8601.
    pub last_updated_at: String,
    /// Retention from creation in milliseconds; `null` keeps the task forever.
    pub ttl_ms: Option<u64>,
    /// How often a client should poll, in milliseconds.
    pub poll_interval_ms: u64,
    /// `{"io.durable-mcp-server/status": <meta>}` once the body published a status meta
    /// object (see [`META_STATUS`]); absent before.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl TaskFields {
    /// The common fields of `snapshot`.
    pub fn of(snapshot: &TaskSnapshot) -> Self {
        TaskFields {
            task_id: snapshot.task_id.clone(),
            status: TaskStatusWire(snapshot.status),
            status_message: snapshot.status_message.clone(),
            created_at: snapshot.created_at.to_rfc3339(),
            last_updated_at: snapshot.last_updated_at.to_rfc3339(),
            ttl_ms: snapshot.ttl.map(duration_millis),
            // The schema wants a positive integer.
            poll_interval_ms: duration_millis(snapshot.poll_interval).max(1),
            meta: snapshot
                .status_meta
                .as_ref()
                .filter(|meta| meta.is_object())
                .map(|meta| Map::from_iter([(META_STATUS.to_owned(), meta.clone())])),
        }
    }
}

/// What `tools/call` answers when it created a task: flat, `resultType: "task"`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateTaskResult {
    /// Always `"task"`.
    pub result_type: &'static str,
    /// The task.
    #[serde(flatten)]
    pub task: TaskFields,
}

impl CreateTaskResult {
    /// The creation result of `snapshot`.
    pub fn of(snapshot: &TaskSnapshot) -> Self {
        CreateTaskResult {
            result_type: "task",
            task: TaskFields::of(snapshot),
        }
    }
}

/// A task as `tasks/get` shows it: the common fields plus what its status carries
/// (`inputRequests`, `result` or `error`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DetailedTask {
    /// The task.
    #[serde(flatten)]
    pub task: TaskFields,
    /// Outstanding requests (`input_required` only), by key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Map<String, Value>>,
    /// The tool's result (`completed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error (`failed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl DetailedTask {
    /// The detailed view of `snapshot`. A stored elicitation becomes an `elicitation/create`
    /// request; a stored result gains `resultType: "complete"`.
    pub fn of(snapshot: &TaskSnapshot) -> Self {
        let input_requests = (snapshot.status == TaskStatus::InputRequired).then(|| {
            snapshot
                .input_requests
                .iter()
                .map(|(key, params)| (key.clone(), elicitation_request(params.clone())))
                .collect()
        });
        let result = match (snapshot.status, &snapshot.result) {
            (TaskStatus::Completed, Some(result)) => Some(complete_result(result.clone())),
            (TaskStatus::Completed, None) => Some(complete_result(Value::Null)),
            _ => None,
        };
        let error = match (snapshot.status, &snapshot.error) {
            (TaskStatus::Failed, Some(failure)) => {
                Some(ErrorObject::new(failure.code, failure.message.clone()))
            }
            (TaskStatus::Failed, None) => Some(ErrorObject::new(
                super::code::INTERNAL_ERROR,
                "the task failed without a recorded error",
            )),
            _ => None,
        };
        let mut task = TaskFields::of(snapshot);
        if let Some(version) = &snapshot.code_version {
            let meta = task.meta.get_or_insert_default();
            meta.insert(META_CODE_VERSION.to_owned(), Value::from(version.as_str()));
        }
        if let Some(parent) = &snapshot.parent_task_id {
            let meta = task.meta.get_or_insert_default();
            let related = Value::from(vec![Value::from(parent.as_str())]);
            meta.insert(META_RELATED_TASKS.to_owned(), related);
        }
        DetailedTask {
            task,
            input_requests,
            result,
            error,
        }
    }
}

/// `result` as a complete result object: a non-object becomes a text block, and
/// `resultType: "complete"` is set.
pub fn complete_result(result: Value) -> Value {
    let mut object = match result {
        Value::Object(object) => object,
        Value::Null => Map::from_iter([("content".to_owned(), Value::Array(Vec::new()))]),
        other => {
            let text = other.to_string();
            serde_json::json!({ "content": [{ "type": "text", "text": text }] })
                .as_object()
                .cloned()
                .unwrap_or_default()
        }
    };
    object.insert("resultType".to_owned(), Value::from("complete"));
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::core::Timestamp;

    fn snapshot(status_meta: Option<Value>) -> TaskSnapshot {
        TaskSnapshot {
            task_id: "t".into(),
            tool_name: "tool".into(),
            status: TaskStatus::Working,
            status_message: Some("warming up".into()),
            status_meta,
            created_at: Timestamp::from_millis(0),
            last_updated_at: Timestamp::from_millis(0),
            ttl: None,
            poll_interval: Duration::from_secs(1),
            result: None,
            error: None,
            input_requests: Vec::new(),
            code_version: None,
            parent_task_id: None,
        }
    }

    #[test]
    fn the_status_meta_is_published_under_its_key_verbatim() {
        let meta = json!({ "phase": "warmup", "lap": 0, "nested": { "a": [1, 2] } });
        let detailed = json!(DetailedTask::of(&snapshot(Some(meta.clone()))));
        assert_eq!(detailed["_meta"], json!({ META_STATUS: meta }));
        let created = json!(CreateTaskResult::of(&snapshot(Some(meta.clone()))));
        assert_eq!(created["_meta"], json!({ META_STATUS: meta }));
    }

    #[test]
    fn tasks_get_shows_the_code_version_beside_the_status_meta() {
        let meta = json!({ "phase": "warmup" });
        let versioned = TaskSnapshot {
            code_version: Some("2026.12.1".into()),
            ..snapshot(Some(meta.clone()))
        };
        let detailed = json!(DetailedTask::of(&versioned));
        assert_eq!(
            detailed["_meta"],
            json!({ META_STATUS: meta, META_CODE_VERSION: "2026.12.1" })
        );
        let created = json!(CreateTaskResult::of(&versioned));
        assert_eq!(created["_meta"], json!({ META_STATUS: meta }));
        let bare = TaskSnapshot {
            code_version: Some("v2".into()),
            ..snapshot(None)
        };
        let detailed = json!(DetailedTask::of(&bare));
        assert_eq!(detailed["_meta"], json!({ META_CODE_VERSION: "v2" }));
    }

    #[test]
    fn a_child_task_names_its_parent_among_its_related_tasks() {
        let child = TaskSnapshot {
            parent_task_id: Some("p1".into()),
            ..snapshot(None)
        };
        let detailed = json!(DetailedTask::of(&child));
        assert_eq!(detailed["_meta"], json!({ META_RELATED_TASKS: ["p1"] }));
    }

    #[test]
    fn no_meta_no_key() {
        assert!(
            json!(DetailedTask::of(&snapshot(None)))
                .get("_meta")
                .is_none()
        );
        assert!(
            json!(CreateTaskResult::of(&snapshot(None)))
                .get("_meta")
                .is_none()
        );
        // A row the engine did not write as an object shows nothing rather than a non-object.
        let corrupt = json!(DetailedTask::of(&snapshot(Some(Value::Null))));
        assert!(corrupt.get("_meta").is_none());
    }
}
