//! The JSON the inspector answers with: a task's summary in a listing, and the whole of one
//! task (its journal, input requests, children and a history read from them).

use serde_json::{Map, Value, json};

use crate::core::child::child_task_id;
use crate::core::schedule::next_wake;
use crate::core::{StepKind, StepStatus, TaskRecord, TaskState, Timestamp};

/// A task as a listing shows it.
pub(crate) fn summary(task: &TaskRecord) -> Value {
    json!({
        "taskId": task.task_id,
        "tool": task.tool_name,
        "status": task.status.as_str(),
        "statusMessage": task.status_message,
        "createdAt": time(task.created_at),
        "lastUpdatedAt": time(task.last_updated_at),
        "finishedAt": task.finished_at.map(time),
        "cancelRequested": task.cancel_requested,
        "parentTaskId": task.parent.as_ref().map(|parent| &parent.task_id),
    })
}

/// The whole of a task: its row, journal, input requests and children, and a history.
pub(crate) fn detail(state: &TaskState) -> Value {
    let task = &state.task;
    let mut view = summary(task);
    let fields = view.as_object_mut().expect("a summary is an object");
    fields.insert("input".into(), stored(Some(&task.input)));
    fields.insert("result".into(), stored(task.result.as_deref()));
    fields.insert(
        "error".into(),
        task.error.as_ref().map_or(
            Value::Null,
            |failure| json!({ "code": failure.code, "message": failure.message }),
        ),
    );
    fields.insert("activations".into(), task.run_attempt.into());
    fields.insert("codeVersion".into(), json!(task.code_version));
    fields.insert("nextWake".into(), json!(next_wake(state).map(time)));
    fields.insert("journal".into(), journal(state));
    fields.insert("inputs".into(), inputs(state));
    fields.insert("children".into(), children(state));
    fields.insert("history".into(), history(state));
    view
}

/// The step rows, in the order they were written, children's starts included.
fn journal(state: &TaskState) -> Value {
    let mut rows: Vec<_> = state.steps.values().collect();
    rows.sort_by_key(|row| row.seq);
    rows.into_iter()
        .map(|row| {
            json!({
                "key": row.key,
                "kind": row.kind.as_str(),
                "status": row.status.as_str(),
                "attempts": row.attempt,
                "lastError": row.last_error,
                "createdAt": time(row.created_at),
                "completedAt": row.completed_at.map(time),
                "nextAttemptAt": row.next_attempt_at.map(time),
                "wakeAt": row.wake_at.map(time),
                "result": stored(row.result.as_deref()),
            })
        })
        .collect()
}

/// The input requests and their answers, oldest first.
fn inputs(state: &TaskState) -> Value {
    let mut rows: Vec<_> = state.inputs.values().collect();
    rows.sort_by_key(|row| row.seq);
    rows.into_iter()
        .map(|input| {
            json!({
                "key": input.key,
                "request": stored(Some(&input.request)),
                "blocking": input.blocking,
                "answered": input.answered,
                "response": stored(input.response.as_deref()),
                "timedOut": input.timed_out,
                "askedAt": time(input.created_at),
                "answeredAt": input.answered_at.map(time),
                "timeoutAt": input.timeout_at.map(time),
            })
        })
        .collect()
}

/// The child tasks the task started: the key, the child's id, and whether it ended.
fn children(state: &TaskState) -> Value {
    let mut rows: Vec<_> = state
        .steps
        .values()
        .filter(|row| row.kind == StepKind::Child)
        .collect();
    rows.sort_by_key(|row| row.seq);
    rows.into_iter()
        .map(|row| {
            json!({
                "key": row.key,
                "taskId": child_task_id(&state.task.task_id, &row.key),
                "ended": row.status != StepStatus::Pending,
                "outcome": stored(row.result.as_deref()),
            })
        })
        .collect()
}

/// What happened to the task when, as its rows tell it: created, each step's end, each
/// question asked and answered, finished. (Statuses in between are not stored; these are.)
fn history(state: &TaskState) -> Value {
    let task = &state.task;
    let mut events: Vec<(Timestamp, String)> = vec![(task.created_at, "created".to_owned())];
    for row in state.steps.values() {
        let Some(at) = row.completed_at else { continue };
        let what = match row.status {
            StepStatus::Failed => "failed",
            _ => "completed",
        };
        events.push((at, format!("{} {:?} {what}", row.kind.as_str(), row.key)));
    }
    for input in state.inputs.values() {
        events.push((input.created_at, format!("input {:?} requested", input.key)));
        if let Some(at) = input.answered_at {
            let what = if input.timed_out {
                "timed out"
            } else {
                "answered"
            };
            events.push((at, format!("input {:?} {what}", input.key)));
        }
    }
    if let Some(at) = task.finished_at {
        events.push((at, task.status.as_str().to_owned()));
    }
    events.sort();
    events
        .into_iter()
        .map(|(at, what)| {
            let mut event = Map::new();
            event.insert("at".into(), time(at).into());
            event.insert("event".into(), what.into());
            Value::Object(event)
        })
        .collect()
}

/// A stored JSON text as JSON (`null` when absent, the text itself if it does not parse).
fn stored(text: Option<&str>) -> Value {
    text.map_or(Value::Null, |text| {
        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
    })
}

fn time(at: Timestamp) -> String {
    at.to_rfc3339()
}
