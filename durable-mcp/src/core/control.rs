//! The control plane's decisions: create, poll, answer, cancel. Pure functions from the loaded
//! state and `now` to the writes a store applies.

use std::time::Duration;

use serde_json::Value;

use super::error::EngineError;
use super::journal::{StepKind, StepStatus, TaskState, Write};
use super::limits::Limits;
use super::schedule::RunCause;
use super::task::{TaskFailure, TaskRecord, TaskStatus};
use super::terminal::settle_cancel;
use super::time::{Timestamp, cap_duration};

/// What a new task is created with.
#[derive(Clone, Debug, PartialEq)]
pub struct NewTask {
    /// The opaque id (128 random bits, from the host).
    pub task_id: String,
    /// The registered task whose body runs.
    pub tool_name: String,
    /// The input, as JSON text already checked against the limits.
    pub input: String,
    /// Retention from creation; `None` keeps the task forever.
    pub ttl: Option<Duration>,
    /// The poll interval suggested to clients.
    pub poll_interval: Duration,
    /// The principal the task is bound to.
    pub principal: Option<String>,
    /// The listing the task appears in; `None`: it is never listed.
    pub list_scope: Option<String>,
    /// The code version it is created under.
    pub code_version: Option<String>,
    /// The task that starts it as its child, if one does.
    pub parent: Option<super::task::ParentLink>,
}

/// The row of a freshly created task: working, due to run at once. Its retention and poll
/// interval are capped at [`MAX_DURATION`](super::time::MAX_DURATION), so that every host can
/// store them and its deadline.
pub fn new_task_record(new: NewTask, now: Timestamp) -> TaskRecord {
    TaskRecord {
        task_id: new.task_id,
        tool_name: new.tool_name,
        input: new.input,
        status: TaskStatus::Working,
        status_message: None,
        status_meta: None,
        status_published: 0,
        created_at: now,
        last_updated_at: now,
        finished_at: None,
        ttl: new.ttl.map(cap_duration),
        poll_interval: cap_duration(new.poll_interval),
        result: None,
        error: None,
        cancel_requested: false,
        run_attempt: 0,
        generation: 0,
        next_run_at: Some(now),
        run_cause: None,
        cut_next_sleep: false,
        principal: new.principal,
        list_scope: new.list_scope,
        code_version: new.code_version,
        parent: new.parent,
        version: 0,
    }
}

/// A working task `"t"` of tool `"tool"`, created at `created_at`, with nothing scheduled: the
/// starting point of the core's unit tests.
#[cfg(test)]
pub(crate) fn test_task(created_at: Timestamp, ttl: Option<Duration>) -> TaskRecord {
    let new = NewTask {
        task_id: "t".into(),
        tool_name: "tool".into(),
        input: "{}".into(),
        ttl,
        poll_interval: Duration::from_secs(5),
        principal: None,
        list_scope: None,
        code_version: None,
        parent: None,
    };
    let mut task = new_task_record(new, created_at);
    task.next_run_at = None;
    task
}

/// Checks that an existing row with the same id was created for the same tool, principal and
/// listing.
pub fn check_duplicate_create(
    existing: &TaskRecord,
    requested: &NewTask,
) -> Result<(), EngineError> {
    if existing.principal != requested.principal || existing.list_scope != requested.list_scope {
        // Say nothing about the other principal's task.
        return Err(EngineError::TaskIdTaken {
            task_id: existing.task_id.clone(),
        });
    }
    if existing.tool_name != requested.tool_name {
        return Err(EngineError::TaskIdConflict {
            task_id: existing.task_id.clone(),
            existing: existing.tool_name.clone(),
            requested: requested.tool_name.clone(),
        });
    }
    Ok(())
}

/// Everything a poller may see of a task. It crosses from a Durable Object to the Worker as
/// JSON, so it is serde both ways.
///
/// Only the engine builds one; more fields may come in a minor release.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TaskSnapshot {
    /// The opaque id.
    pub task_id: String,
    /// The registered task.
    pub tool_name: String,
    /// The status.
    pub status: TaskStatus,
    /// The last published message.
    pub status_message: Option<String>,
    /// The last published meta object.
    pub status_meta: Option<Value>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last visible change.
    pub last_updated_at: Timestamp,
    /// Retention from creation.
    pub ttl: Option<Duration>,
    /// Suggested poll interval.
    pub poll_interval: Duration,
    /// The result (completed tasks).
    pub result: Option<Value>,
    /// The failure (failed tasks).
    pub error: Option<TaskFailure>,
    /// Unanswered elicitations, oldest first, while `input_required`: each its key and the
    /// request as the body gave it to [`elicit`](crate::TaskContext::elicit), the params of an
    /// `elicitation/create` (`{"message": .., "requestedSchema": ..}`). The wire's
    /// `inputRequests` wraps each as `{"method": "elicitation/create", "params": ..}`.
    pub input_requests: Vec<(String, Value)>,
    /// The code version the task was created under, if recorded.
    pub code_version: Option<String>,
    /// The task that started this one as its child, if one did.
    #[serde(default)]
    pub parent_task_id: Option<String>,
}

fn parse_stored(text: &str) -> Value {
    // Only the engine writes these columns, always from serde_json; a corrupt row shows as null.
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// The snapshot of a loaded task.
pub fn snapshot(state: &TaskState) -> TaskSnapshot {
    let task = &state.task;
    let mut waiting: Vec<_> = state
        .inputs
        .values()
        .filter(|i| i.blocking && !i.answered && task.status == TaskStatus::InputRequired)
        .collect();
    waiting.sort_by_key(|input| input.seq);
    TaskSnapshot {
        task_id: task.task_id.clone(),
        tool_name: task.tool_name.clone(),
        status: task.status,
        status_message: task.status_message.clone(),
        status_meta: task.status_meta.as_deref().map(parse_stored),
        created_at: task.created_at,
        last_updated_at: task.last_updated_at,
        ttl: task.ttl,
        poll_interval: task.poll_interval,
        result: task.result.as_deref().map(parse_stored),
        error: task.error.clone(),
        input_requests: waiting
            .into_iter()
            .map(|i| (i.key.clone(), parse_stored(&i.request)))
            .collect(),
        code_version: task.code_version.clone(),
        parent_task_id: task.parent.as_ref().map(|parent| parent.task_id.clone()),
    }
}

/// Validates a `tasks/update` payload: an object whose values are objects, each within limits.
pub fn validate_responses(
    responses: &Value,
    limits: &Limits,
) -> Result<Vec<(String, String)>, EngineError> {
    let invalid = |reason: String| EngineError::InvalidResponses { reason };
    let Value::Object(map) = responses else {
        return Err(invalid(format!("got {}", type_name(responses))));
    };
    let mut parsed = Vec::with_capacity(map.len());
    for (key, value) in map {
        if !value.is_object() {
            return Err(invalid(format!(
                "the response to {key:?} is {}",
                type_name(value)
            )));
        }
        let json = value.to_string();
        limits.check_value(|| format!("the response to {key:?}"), &json)?;
        parsed.push((key.clone(), json));
    }
    Ok(parsed)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The writes that record input responses: first answer wins, unknown keys are ignored.
///
/// An answered elicitation resumes an `input_required` task once none is left unanswered; an
/// answered offer cuts the task's latest pending sleep short (or, with none pending, the next
/// one it records). A terminal task takes no answers, and neither does one whose cancellation
/// is recorded: it ends `cancelled` whatever is answered, so an answer is acknowledged and
/// changes nothing, as for a task that has ended.
pub fn plan_update(
    state: &TaskState,
    responses: &[(String, String)],
    now: Timestamp,
) -> Vec<Write> {
    let task = &state.task;
    if task.status.is_terminal() || task.cancel_requested {
        return Vec::new();
    }
    let mut writes = Vec::new();
    let (mut blocking_answered, mut offer_answered) = (false, false);
    for (key, response) in responses {
        let Some(input) = state.inputs.get(key) else {
            continue;
        };
        if input.answered || input.consumed {
            continue;
        }
        let mut input = input.clone();
        input.answered = true;
        input.answered_at = Some(now);
        input.response = Some(response.clone());
        if input.blocking {
            blocking_answered = true;
        } else {
            offer_answered = true;
        }
        writes.push(Write::PutInput(input));
    }
    if writes.is_empty() {
        return writes;
    }
    let mut record = task.clone();
    record.last_updated_at = now;
    if blocking_answered && record.status == TaskStatus::InputRequired {
        let answered: Vec<&str> = responses.iter().map(|(k, _)| k.as_str()).collect();
        let still_waiting = state
            .inputs
            .values()
            .any(|i| i.blocking && !i.answered && !answered.contains(&i.key.as_str()));
        if !still_waiting {
            record.transition(TaskStatus::Working, now);
            record.request_run(now, RunCause::Answer);
        }
    }
    if offer_answered && record.status == TaskStatus::Working {
        let latest_sleep = state
            .steps
            .values()
            .filter(|s| s.kind == StepKind::Sleep && s.status == StepStatus::Pending)
            .max_by_key(|s| s.seq);
        match latest_sleep {
            Some(sleep) => {
                let mut sleep = sleep.clone();
                sleep.status = StepStatus::Completed;
                sleep.completed_at = Some(now);
                writes.push(Write::PutStep(sleep));
            }
            None => record.cut_next_sleep = true,
        }
        record.request_run(now, RunCause::Answer);
    }
    writes.push(Write::PutTask(record));
    writes
}

/// The writes that request cancellation of a live task (none for a terminal one). With
/// `settle`, no activation of the task runs, so nothing is left to observe the request: the
/// task is cancelled in the same write, unless the body registered compensations, which an
/// activation must run first.
pub fn plan_cancel(state: &TaskState, now: Timestamp, settle: bool) -> Vec<Write> {
    let mut task = state.task.clone();
    let settle = settle && !super::schedule::cleanup_left(state, now);
    if task.status.is_terminal() || (task.cancel_requested && !settle) {
        return Vec::new();
    }
    if settle {
        return vec![settle_cancel(state, now)];
    }
    task.cancel_requested = true;
    task.last_updated_at = now;
    task.request_run(now, RunCause::Cancel);
    vec![Write::PutTask(task)]
}

/// What an operator does to a task (through the inspector), whoever created it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Ask the task to stop, as `tasks/cancel` does.
    Cancel,
    /// Run the task now: see [`plan_wake`].
    Wake,
    /// Record input responses (`{key: response}`), as `tasks/update` does.
    Answer(Value),
}

/// The writes that make a live task run now, as an operator asks: each retry waiting for its
/// backoff is due now, and each sleep ends now. A task waiting for input goes on waiting (only
/// an answer or a cancel ends that); a finished one is left as it is.
pub fn plan_wake(state: &TaskState, now: Timestamp) -> Vec<Write> {
    let task = &state.task;
    if task.status.is_terminal() {
        return Vec::new();
    }
    let mut writes: Vec<Write> = state
        .steps
        .values()
        .filter(|row| row.status == StepStatus::Pending)
        .filter_map(|row| {
            let mut row = row.clone();
            let due = match row.kind {
                StepKind::Do => &mut row.next_attempt_at,
                StepKind::Sleep => &mut row.wake_at,
                _ => return None,
            };
            due.filter(|at| *at > now)?;
            *due = Some(now);
            Some(Write::PutStep(row))
        })
        .collect();
    if task.status == TaskStatus::Working {
        let mut task = task.clone();
        task.last_updated_at = now;
        task.request_run(now, RunCause::Operator);
        writes.push(Write::PutTask(task));
    }
    writes
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::core::journal::InputRow;
    use serde_json::json;

    fn state(status: TaskStatus, inputs: &[(&str, bool)]) -> TaskState {
        let mut task = test_task(Timestamp(0), None);
        task.status = status;
        let inputs = inputs
            .iter()
            .enumerate()
            .map(|(seq, (key, blocking))| {
                let row =
                    InputRow::unanswered(key, "{}".into(), *blocking, seq as u64 + 1, Timestamp(0));
                ((*key).to_owned(), row)
            })
            .collect();
        TaskState {
            task,
            steps: BTreeMap::new(),
            inputs,
        }
    }

    fn responses(value: serde_json::Value) -> Vec<(String, String)> {
        validate_responses(&value, &Limits::DEFAULT).expect("valid")
    }

    fn task_write(writes: &[Write]) -> &TaskRecord {
        writes
            .iter()
            .find_map(|w| match w {
                Write::PutTask(t) => Some(t),
                _ => None,
            })
            .expect("a task write")
    }

    #[test]
    fn the_last_blocking_answer_resumes_the_task() {
        let s = state(TaskStatus::InputRequired, &[("a", true), ("b", true)]);
        let partial = plan_update(&s, &responses(json!({ "a": {} })), Timestamp(9));
        assert_eq!(task_write(&partial).status, TaskStatus::InputRequired);
        let both = plan_update(&s, &responses(json!({ "a": {}, "b": {} })), Timestamp(9));
        let task = task_write(&both);
        assert_eq!(
            (task.status, task.next_run_at),
            (TaskStatus::Working, Some(Timestamp(9)))
        );
    }

    #[test]
    fn answered_unknown_and_terminal_are_ignored() {
        let mut s = state(TaskStatus::InputRequired, &[("a", true)]);
        assert!(plan_update(&s, &responses(json!({ "zzz": {} })), Timestamp(1)).is_empty());
        s.inputs.get_mut("a").expect("row").answered = true;
        assert!(plan_update(&s, &responses(json!({ "a": {} })), Timestamp(1)).is_empty());
        let done = state(TaskStatus::Completed, &[("a", true)]);
        assert!(plan_update(&done, &responses(json!({ "a": {} })), Timestamp(1)).is_empty());
    }

    #[test]
    fn a_task_being_cancelled_takes_no_answer() {
        let mut s = state(TaskStatus::InputRequired, &[("a", true), ("o", false)]);
        s.task.cancel_requested = true;
        let answers = responses(json!({ "a": {}, "o": {} }));
        assert!(plan_update(&s, &answers, Timestamp(1)).is_empty());
        s.task.cancel_requested = false;
        assert!(!plan_update(&s, &answers, Timestamp(1)).is_empty());
    }

    #[test]
    fn responses_must_be_objects() {
        for bad in [
            json!(null),
            json!([]),
            json!({ "a": [] }),
            json!({ "a": "yes" }),
        ] {
            assert!(validate_responses(&bad, &Limits::DEFAULT).is_err(), "{bad}");
        }
        assert!(validate_responses(&json!({}), &Limits::DEFAULT).is_ok());
    }

    #[test]
    fn cancel_is_requested_once_and_never_on_a_terminal_task() {
        let s = state(TaskStatus::Working, &[]);
        let writes = plan_cancel(&s, Timestamp(3), false);
        let task = task_write(&writes);
        assert!(task.cancel_requested);
        assert_eq!(task.next_run_at, Some(Timestamp(3)));
        let mut requested = s.clone();
        requested.task.cancel_requested = true;
        assert!(plan_cancel(&requested, Timestamp(4), false).is_empty());
        assert!(plan_cancel(&state(TaskStatus::Failed, &[]), Timestamp(4), false).is_empty());
        assert!(plan_cancel(&state(TaskStatus::Failed, &[]), Timestamp(4), true).is_empty());
    }

    #[test]
    fn a_cancel_with_nothing_running_settles_at_once() {
        let mut s = state(TaskStatus::Working, &[]);
        for requested in [false, true] {
            s.task.cancel_requested = requested;
            let writes = plan_cancel(&s, Timestamp(3), true);
            let task = task_write(&writes);
            assert_eq!(task.status, TaskStatus::Cancelled);
            assert_eq!(task.generation, s.task.generation + 1, "the lease moves on");
        }
    }

    #[test]
    fn snapshots_list_only_unanswered_elicitations_in_order() {
        let mut s = state(
            TaskStatus::InputRequired,
            &[("b", true), ("a", true), ("o", false)],
        );
        s.inputs.get_mut("a").expect("row").request = r#"{"n":2}"#.into();
        let keys: Vec<_> = snapshot(&s)
            .input_requests
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["b", "a"]);
        s.task.status = TaskStatus::Working;
        assert!(snapshot(&s).input_requests.is_empty());
    }
}
