//! The engine's `tracing` events: one function per thing that happens to a task, so that every
//! event carries the same fields under the same names and a reader finds them all here.
//!
//! Every event has the target [`TARGET`] and the fields `task_id` and `tool`; a step's events
//! add `step` (its journal key) and `attempt`, an input's `input` (its key). Times are RFC 3339
//! text. Nothing is emitted for what a replay reads back from the journal: only what happens
//! now. With no subscriber listening, each call costs a check of a static flag.
//!
//! The events are roots (`parent: None`): they carry the task's fields themselves, so a
//! formatter does not print them twice under the `task` span the runtime opens around a body
//! (which is there for the application's own events).

use std::time::Duration;

use tracing::{debug, error, info, warn};

use super::journal::{TaskState, Write};
use super::outcome::{BodyOutcome, Suspension};
use super::schedule::{RunReason, timed_waits};
use super::step_failure::StepFailure;
use super::task::{TaskRecord, TaskStatus};
use super::time::{Timestamp, duration_millis};

/// The target of every engine event: `RUST_LOG=durable_mcp=debug` shows step attempts too.
pub const TARGET: &str = "durable_mcp";

/// A task was stored.
pub fn task_created(task: &TaskRecord) {
    let parent = task.parent.as_ref().map(|link| link.task_id.as_str());
    info!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, parent,
        "task created"
    );
}

/// The body called `name` for a `then` after a `first`, which share its keys: the `then` got
/// `key`. (Once a run for each name.)
pub fn name_shared(
    task: &TaskRecord,
    name: &str,
    first: impl std::fmt::Display,
    then: impl std::fmt::Display,
    key: &str,
) {
    warn!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, name, key,
        "the name {name:?} is used by two kinds of operation of this task, {first} then \
         {then}: they share its keys, so the {then} is recorded as {key:?}; give each \
         operation a name of its own (a journal that already holds both keeps them as they are)"
    );
}

/// The fields of the `task` span every event inside a task carries, which the hosts' logs
/// put at the top level of each event: its id, its tool, and the root of its tree (its own id
/// unless another task started it), so that one filter follows a task and its children.
#[cfg(all(any_host, feature = "logging"))]
pub const TASK_FIELDS: [&str; 3] = ["task_id", "tool", "root_task_id"];

/// An activation claimed the task and runs its body, because of `reason`.
pub fn activation_started(task: &TaskRecord, reason: &RunReason) {
    info!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, root_task_id = %task.root_id(),
        activation = task.generation, reason = %reason,
        "activation started"
    );
}

/// The activation whose body ended with `outcome` settled the task as `settled`.
pub fn activation_ended(settled: &TaskState, outcome: &BodyOutcome) {
    let task = &settled.task;
    let (ended, error) = describe(outcome);
    let error = error.or(task.error.as_ref().map(|failure| failure.message.as_str()));
    if task.status == TaskStatus::Failed {
        error!(
            target: TARGET, parent: None,
            task_id = %task.task_id, tool = %task.tool_name, activation = task.generation,
            status = %task.status, ended, error,
            "activation ended: the task failed"
        );
    } else {
        info!(
            target: TARGET, parent: None,
            task_id = %task.task_id, tool = %task.tool_name, activation = task.generation,
            status = %task.status, ended, error,
            // Evaluated only when the event is enabled, as every field is.
            waiting_for = (!task.status.is_terminal()).then(|| waiting_for(settled)),
            "activation ended"
        );
    }
}

/// How a body ended, in a word or three, and the error it ended with.
fn describe(outcome: &BodyOutcome) -> (&'static str, Option<&str>) {
    match outcome {
        BodyOutcome::Returned(_) => ("returned", None),
        BodyOutcome::Refused(failure) => ("returned a protocol error", Some(&failure.message)),
        BodyOutcome::Errored(message) => ("returned an error", Some(message)),
        BodyOutcome::Stopped(end) => match &end.suspension {
            Suspension::Wait => ("waits", None),
            Suspension::HandOff => ("handed off", None),
            Suspension::Cancelled => ("cancelled", None),
            Suspension::Stale => ("lost its lease", None),
            Suspension::StoreUnavailable(message) => ("store unavailable", Some(message)),
            Suspension::Fail(_) => ("failed", None),
        },
    }
}

/// A step attempt starts: its closure is about to run.
pub fn attempt_started(task: &TaskRecord, step: &str, attempt: u32) {
    debug!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, step, attempt,
        "step attempt started"
    );
}

/// A step attempt returned a value, which is recorded.
pub fn step_completed(task: &TaskRecord, step: &str, attempt: u32, took: Duration) {
    debug!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, step, attempt,
        duration_ms = duration_millis(took),
        "step completed"
    );
}

/// A step attempt failed with `error`; the next one is due at `retry_at`.
pub fn retry_scheduled(
    task: &TaskRecord,
    step: &str,
    attempt: u32,
    took: Duration,
    error: &str,
    retry_at: Timestamp,
) {
    warn!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, step, attempt,
        duration_ms = duration_millis(took), error, retry_at = %retry_at.to_rfc3339(),
        "step attempt failed; retry scheduled"
    );
}

/// A step failed for good: its failure is recorded and returned to the body.
pub fn step_failed(task: &TaskRecord, step: &str, took: Duration, failure: &StepFailure) {
    warn!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, step, attempt = failure.attempts,
        duration_ms = duration_millis(took), error = %failure.message, kind = ?failure.kind,
        "step failed"
    );
}

/// The body asked for input under `input`; the task waits for the answer.
pub fn input_requested(task: &TaskRecord, input: &str, timeout_at: Option<Timestamp>) {
    info!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, input,
        timeout_at = timeout_at.map(Timestamp::to_rfc3339),
        "input requested"
    );
}

/// The body started a child task under `key`.
pub fn child_started(task: &TaskRecord, key: &str, child_task_id: &str) {
    info!(
        target: TARGET, parent: None,
        task_id = %task.task_id, tool = %task.tool_name, key, child_task_id,
        "child task started"
    );
}

/// Writes outside an activation committed on a task that was `before`: says what they
/// changed (an answer, a cancel request, a timeout, a status), one event each.
pub fn written(before: &TaskState, writes: &[Write]) {
    let task = &before.task;
    for write in writes {
        match write {
            Write::PutInput(input) if input.answered && !was_answered(before, &input.key) => {
                let message = if input.timed_out {
                    "input timed out"
                } else {
                    "input answered"
                };
                info!(
                    target: TARGET, parent: None,
                    task_id = %task.task_id, tool = %task.tool_name, input = %input.key,
                    "{message}"
                );
            }
            Write::PutTask(after) => task_changed(task, after),
            _ => {}
        }
    }
}

/// A task's rows were deleted: its retention is over.
pub fn task_purged(task_id: &str) {
    info!(target: TARGET, parent: None, task_id, "task purged");
}

/// An ended child task told its parent how it ended (`taken`), or could not reach it and
/// tries again later.
pub fn parent_notified(task: &TaskRecord, parent_task_id: &str, taken: bool) {
    if taken {
        debug!(
            target: TARGET, parent: None,
            task_id = %task.task_id, tool = %task.tool_name, parent_task_id,
            "parent told of the child's end"
        );
    } else {
        warn!(
            target: TARGET, parent: None,
            task_id = %task.task_id, tool = %task.tool_name, parent_task_id,
            "parent not reached; trying again shortly"
        );
    }
}

/// A wake-up of the task failed with `error`; the host tries again later.
#[cfg(any_host)]
pub fn tick_failed(task_id: &str, error: &dyn std::fmt::Display) {
    warn!(target: TARGET, parent: None, task_id, %error, "wake-up failed; trying again later");
}

/// What a task that is not finished waits for, as the rows it settled with say.
pub fn waiting_for(state: &TaskState) -> String {
    let task = &state.task;
    if task.status == TaskStatus::InputRequired {
        let keys: Vec<&str> = state
            .inputs
            .values()
            .filter(|input| input.blocking && !input.answered)
            .map(|input| input.key.as_str())
            .collect();
        return format!("input {keys:?}");
    }
    let timed = timed_waits(state).min_by_key(|(at, _)| *at);
    let children: Vec<&str> = state
        .pending_children()
        .map(|row| row.key.as_str())
        .collect();
    match (task.next_run_at, timed) {
        (Some(run), timed) if timed.is_none_or(|(at, _)| run <= at) => {
            format!("a run at {}", run.to_rfc3339())
        }
        (_, Some((at, wait))) => format!("{wait} at {}", at.to_rfc3339()),
        _ if !children.is_empty() => format!("child tasks {children:?}"),
        _ => "an answer or a cancel".to_owned(),
    }
}

/// Events for a task row written over `before`: a cancel asked, a status reached.
fn task_changed(before: &TaskRecord, after: &TaskRecord) {
    if after.cancel_requested && !before.cancel_requested {
        info!(
            target: TARGET, parent: None,
            task_id = %after.task_id, tool = %after.tool_name,
            "cancel requested"
        );
    }
    if after.status == before.status {
        return;
    }
    let message = after.status_message.as_deref();
    if let Some(failure) = &after.error {
        error!(
            target: TARGET, parent: None,
            task_id = %after.task_id, tool = %after.tool_name, status = %after.status,
            error = %failure.message,
            "task failed"
        );
    } else {
        info!(
            target: TARGET, parent: None,
            task_id = %after.task_id, tool = %after.tool_name, status = %after.status, status_message = message,
            "task status changed"
        );
    }
}

fn was_answered(state: &TaskState, key: &str) -> bool {
    state.inputs.get(key).is_some_and(|input| input.answered)
}
