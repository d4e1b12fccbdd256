//! A task tool called by a 2026-07-28 client that did not declare the Tasks extension: the
//! task is created and stored as always, and the call waits for it. Input the task asks for is
//! answered the way the core revision asks for input inside a plain call: an
//! `InputRequiredResult` carrying the task's requests and a `requestState` naming the task. The
//! client retries the call with its answers and that state, which records the answers on the
//! task and waits again, so the rounds go through the task's journal like `tasks/update` does:
//! a restart of the host between two rounds loses nothing.

use serde_json::{Map, Value};

use super::error::RpcError;
use super::request::ToolCall;
use crate::core::TaskSnapshot;
use crate::runtime::TaskRoute;
use crate::wire::InputRequiredResult;
use crate::wire::tools::elicitation_request;

/// What starts the `requestState` of a task's input round; the task id follows. A tool's own
/// `prepare` hook chooses its states freely, so the prefix is long enough not to be chosen by
/// chance.
const STATE_PREFIX: &str = "durable-mcp/task/";

/// The task a retried call continues, if its `requestState` is one of ours.
pub(crate) fn resumed_task(call: &ToolCall) -> Option<&str> {
    call.request_state.as_deref()?.strip_prefix(STATE_PREFIX)
}

/// The round that asks `requests` (the task's unanswered input, by key) of the client.
pub(crate) fn input_round(task_id: &str, requests: &[(String, Value)]) -> InputRequiredResult {
    let input_requests: Map<String, Value> = requests
        .iter()
        .map(|(key, params)| (key.clone(), elicitation_request(params.clone())))
        .collect();
    InputRequiredResult {
        input_requests,
        request_state: Some(format!("{STATE_PREFIX}{task_id}")),
    }
}

/// Continues the task of a retried call of `tool`: records the answers the call carries and
/// returns the task as it was read before them, with the keys this call answered (the follower
/// does not ask those again, and reads the task anew after its first pause). The state is
/// client-held, so the task is read with the caller's identity like any `tasks/get`, and must
/// be a task of the tool called.
pub(crate) async fn resume(
    tasks: &dyn TaskRoute,
    tool: &str,
    task_id: &str,
    call: &ToolCall,
) -> Result<(TaskSnapshot, Vec<String>), RpcError> {
    let caller = call.principal.as_deref();
    let task = tasks.get(task_id, caller).await.map_err(|error| {
        RpcError::invalid_params(format!(
            "requestState names the task {task_id}, which this server cannot continue ({}); \
             call the tool again without requestState to start over",
            RpcError::from(error).error.message
        ))
    })?;
    if task.tool_name != tool {
        return Err(RpcError::invalid_params(format!(
            "requestState belongs to a call of {:?}, not of {tool:?}; send it back only with the \
             call that received it",
            task.tool_name
        )));
    }
    let answered: Vec<String> = call
        .input_responses
        .iter()
        .flat_map(|responses| responses.keys().cloned())
        .collect();
    if answered.is_empty() {
        return Ok((task, answered));
    }
    let responses = Value::Object(call.input_responses.clone().unwrap_or_default());
    tasks.update(task_id, &responses, caller).await?;
    Ok((task, answered))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_round_names_its_task_and_only_ours_resume() {
        let round = input_round(
            "t1",
            &[("confirm".to_owned(), json!({ "message": "Sure?" }))],
        );
        assert_eq!(
            round.input_requests["confirm"]["method"],
            "elicitation/create"
        );
        let call = ToolCall {
            request_state: round.request_state,
            ..ToolCall::default()
        };
        assert_eq!(resumed_task(&call), Some("t1"));
        let theirs = ToolCall {
            request_state: Some("round-1".to_owned()),
            ..ToolCall::default()
        };
        assert_eq!(resumed_task(&theirs), None);
    }
}
