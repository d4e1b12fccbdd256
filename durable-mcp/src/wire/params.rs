//! The params of the requests the router serves (the `_meta` envelope is read separately, see
//! [`RequestMeta`](super::RequestMeta)). Unknown fields are ignored, as the revision requires.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `tools/call` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Answers to the input requests of an earlier `InputRequiredResult`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// The `requestState` of that result, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// `tasks/get` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetTaskParams {
    /// The task.
    pub task_id: String,
}

/// `tasks/cancel` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelTaskParams {
    /// The task.
    pub task_id: String,
}

/// `tasks/update` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Answers by input request key (elicitation results, ...).
    pub input_responses: Value,
}

/// `resources/read` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReadResourceParams {
    /// The resource.
    pub uri: String,
}
