//! The JSON the inspector answers with: a task's summary in a listing, and the whole of one
//! task (its journal, input requests, children and a history read from them).

use serde_json::{Map, Value, json};

use crate::core::child::child_task_id;
use crate::core::own_keys::is_cleanup_key;
use crate::core::schedule::next_wake;
use crate::core::{StepKind, StepRow, StepStatus, TaskRecord, TaskState, TaskStatus, Timestamp};

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
            let (kind, status) = kind_and_status(&state.task, row);
            json!({
                "key": row.key,
                "kind": kind,
                "status": status,
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

/// A row's kind and status as an operator reads them. A compensation (`cx.on_cancel`) is a
/// `compensation`; until a cancel runs it, it is `registered`, not `pending`: it waits for
/// no retry, and a task that ends otherwise never runs it.
fn kind_and_status(task: &TaskRecord, row: &StepRow) -> (&'static str, &'static str) {
    if !is_cleanup_key(&row.key) {
        return (row.kind.as_str(), row.status.as_str());
    }
    let cancelling = task.cancel_requested || task.status == TaskStatus::Cancelled;
    let status = match row.status {
        StepStatus::Pending if !cancelling => "registered",
        status => status.as_str(),
    };
    ("compensation", status)
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

#[cfg(all(test, feature = "testing"))]
mod tests {
    use serde_json::json;

    use crate::runtime::{TaskDefinition, TaskRegistry};
    use crate::testing::Harness;
    use crate::{StepError, TaskStatus};

    /// A task that registers a compensation, then waits a minute and completes.
    fn booking() -> TaskRegistry {
        TaskRegistry::new().register(TaskDefinition::new("book", |cx, _| {
            Box::pin(async move {
                cx.on_cancel("release", || async { Ok::<_, StepError>(()) });
                cx.sleep("hold", "1m").await?;
                Ok(json!({ "content": [] }))
            })
        }))
    }

    fn release_row(harness: &Harness, id: &str) -> serde_json::Value {
        let view = super::detail(&harness.journal(id));
        let journal = view["journal"].as_array().unwrap().clone();
        journal
            .into_iter()
            .find(|row| row["key"].as_str().unwrap().contains("release"))
            .expect("the compensation's row")
    }

    #[test]
    fn a_compensation_no_cancel_ran_is_registered_not_pending() {
        let mut harness = Harness::new(booking());
        let id = harness.create("book", json!({}));
        harness.run_until_idle();
        let row = release_row(&harness, &id);
        assert_eq!(
            (&row["kind"], &row["status"]),
            (&json!("compensation"), &json!("registered"))
        );
        harness.advance("1m");
        assert_eq!(harness.status(&id), TaskStatus::Completed);
        let row = release_row(&harness, &id);
        assert_eq!(
            row["status"], "registered",
            "a completed task never runs it: {row}"
        );
    }

    #[test]
    fn a_cancel_runs_the_compensation_as_a_step() {
        let mut harness = Harness::new(booking());
        let id = harness.create("book", json!({}));
        harness.run_until_idle();
        harness.cancel(&id);
        assert_eq!(harness.status(&id), TaskStatus::Cancelled);
        let row = release_row(&harness, &id);
        assert_eq!(
            (&row["kind"], &row["status"]),
            (&json!("compensation"), &json!("completed"))
        );
    }
}
