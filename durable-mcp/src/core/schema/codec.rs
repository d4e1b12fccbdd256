//! The mapping between records and rows: the parameters each statement binds from a
//! [`TaskRecord`], [`StepRow`] or [`InputRow`], the records read back from its rows, and the
//! statement and parameters that carry out one [`Write`] or read one listing page.
//!
//! Both stores call these, so a column can never mean one thing to the native store and another
//! to the Durable Object store.

use std::time::Duration;

use super::statements::{
    AWAIT_INPUT, CLEAR_SLEEP_CUT, PUBLISH_STATUS, PUT_INPUT, PUT_STEP, PUT_TASK, SELECT_EVERY,
    SELECT_EVERY_AFTER, SELECT_LISTED, SELECT_LISTED_AFTER,
};
use super::value::{Reader, RowError, SqlRow, SqlValue, flag, int, opt_time};
use crate::core::journal::{Guard, InputRow, StepKind, StepRow, StepStatus, Write};
use crate::core::listing::ListPosition;
use crate::core::task::{TaskFailure, TaskRecord, TaskStatus};
use crate::core::time::duration_millis;

/// The parameters of [`INSERT_TASK`](super::INSERT_TASK) and [`PUT_TASK`].
pub fn task_params(task: &TaskRecord) -> Vec<SqlValue> {
    vec![
        task.task_id.as_str().into(),
        task.tool_name.as_str().into(),
        task.input.as_str().into(),
        task.status.as_str().into(),
        task.status_message.clone().into(),
        task.status_meta.clone().into(),
        int(u64::from(task.status_published)),
        int(task.created_at.as_millis()),
        int(task.last_updated_at.as_millis()),
        opt_time(task.finished_at),
        task.ttl.map_or(SqlValue::Null, |t| int(duration_millis(t))),
        int(duration_millis(task.poll_interval)),
        task.result.clone().into(),
        task.error
            .as_ref()
            .map_or(SqlValue::Null, |e| SqlValue::Integer(e.code)),
        task.error.as_ref().map(|e| e.message.clone()).into(),
        flag(task.cancel_requested),
        int(u64::from(task.run_attempt)),
        int(task.generation),
        opt_time(task.next_run_at),
        flag(task.cut_next_sleep),
        task.principal.clone().into(),
        task.parent
            .as_ref()
            .map(|parent| serde_json::to_string(parent).expect("a parent link is plain JSON"))
            .into(),
        task.run_cause.clone().into(),
        int(task.version),
        task.list_scope.clone().into(),
        task.code_version.clone().into(),
    ]
}

/// Reads a row of [`SELECT_TASK`](super::SELECT_TASK).
pub fn task_from_row(row: &(impl SqlRow + ?Sized)) -> Result<TaskRecord, RowError> {
    let r = Reader(row);
    let error = match (r.0.integer(13)?, r.opt_text(14)?) {
        (Some(code), Some(message)) => Some(TaskFailure { code, message }),
        _ => None,
    };
    Ok(TaskRecord {
        task_id: r.text(0)?,
        tool_name: r.text(1)?,
        input: r.text(2)?,
        status: r.parsed(3, TaskStatus::parse)?,
        status_message: r.opt_text(4)?,
        status_meta: r.opt_text(5)?,
        status_published: r.u32(6)?,
        created_at: r.time(7)?,
        last_updated_at: r.time(8)?,
        finished_at: r.opt_time(9)?,
        ttl: r.opt_uint(10)?.map(Duration::from_millis),
        poll_interval: Duration::from_millis(r.uint(11)?),
        result: r.opt_text(12)?,
        error,
        cancel_requested: r.flag(15)?,
        run_attempt: r.u32(16)?,
        generation: r.uint(17)?,
        next_run_at: r.opt_time(18)?,
        cut_next_sleep: r.flag(19)?,
        principal: r.opt_text(20)?,
        parent: r.opt_json(21)?,
        run_cause: r.opt_text(22)?,
        version: r.uint(23)?,
        list_scope: r.opt_text(24)?,
        code_version: r.opt_text(25)?,
    })
}

/// The parameters of [`PUT_STEP`].
pub fn step_params(task_id: &str, step: &StepRow) -> Vec<SqlValue> {
    vec![
        task_id.into(),
        step.key.as_str().into(),
        step.kind.as_str().into(),
        step.status.as_str().into(),
        step.result.clone().into(),
        int(u64::from(step.attempt)),
        opt_time(step.next_attempt_at),
        opt_time(step.wake_at),
        step.last_error.clone().into(),
        int(step.seq),
        int(step.created_at.as_millis()),
        opt_time(step.completed_at),
    ]
}

/// Reads a row of [`SELECT_STEPS`](super::SELECT_STEPS).
pub fn step_from_row(row: &(impl SqlRow + ?Sized)) -> Result<StepRow, RowError> {
    let r = Reader(row);
    Ok(StepRow {
        key: r.text(0)?,
        kind: r.parsed(1, StepKind::parse_step)?,
        status: r.parsed(2, StepStatus::parse)?,
        result: r.opt_text(3)?,
        attempt: r.u32(4)?,
        next_attempt_at: r.opt_time(5)?,
        wake_at: r.opt_time(6)?,
        last_error: r.opt_text(7)?,
        seq: r.uint(8)?,
        created_at: r.time(9)?,
        completed_at: r.opt_time(10)?,
    })
}

/// The parameters of [`PUT_INPUT`].
pub fn input_params(task_id: &str, input: &InputRow) -> Vec<SqlValue> {
    vec![
        task_id.into(),
        input.key.as_str().into(),
        input.request.as_str().into(),
        input.response.clone().into(),
        flag(input.answered),
        opt_time(input.answered_at),
        opt_time(input.timeout_at),
        flag(input.timed_out),
        flag(input.blocking),
        flag(input.consumed),
        int(input.seq),
        int(input.created_at.as_millis()),
    ]
}

/// Reads a row of [`SELECT_INPUTS`](super::SELECT_INPUTS).
pub fn input_from_row(row: &(impl SqlRow + ?Sized)) -> Result<InputRow, RowError> {
    let r = Reader(row);
    Ok(InputRow {
        key: r.text(0)?,
        request: r.text(1)?,
        response: r.opt_text(2)?,
        answered: r.flag(3)?,
        answered_at: r.opt_time(4)?,
        timeout_at: r.opt_time(5)?,
        timed_out: r.flag(6)?,
        blocking: r.flag(7)?,
        consumed: r.flag(8)?,
        seq: r.uint(9)?,
        created_at: r.time(10)?,
    })
}

/// The statement and parameters that carry out one write on a SQL store.
pub fn write_statement(task_id: &str, write: &Write) -> (&'static str, Vec<SqlValue>) {
    match write {
        Write::PutTask(task) => {
            // PUT_TASK leaves `version` to the guard, and `list_scope` and `code_version` as
            // created: the last three.
            let mut params = task_params(task);
            params.truncate(params.len() - 3);
            (PUT_TASK, params)
        }
        Write::PutStep(step) => (PUT_STEP, step_params(task_id, step)),
        Write::PutInput(input) => (PUT_INPUT, input_params(task_id, input)),
        Write::PublishStatus {
            message,
            meta,
            published,
            at,
        } => (
            PUBLISH_STATUS,
            vec![
                task_id.into(),
                message.as_str().into(),
                meta.clone().into(),
                int(u64::from(*published)),
                int(at.as_millis()),
            ],
        ),
        Write::AwaitInput { at } => (AWAIT_INPUT, vec![task_id.into(), int(at.as_millis())]),
        Write::ClearSleepCut => (CLEAR_SLEEP_CUT, vec![task_id.into()]),
    }
}

/// The statement and parameters that read up to `limit` tasks of the listing `scope` strictly
/// after `after` (from the start when `None`), oldest first; rows as [`task_from_row`] reads.
pub fn listed_statement(
    scope: &str,
    after: Option<&ListPosition>,
    limit: usize,
) -> (&'static str, Vec<SqlValue>) {
    let limit = int(u64::try_from(limit).unwrap_or(u64::MAX));
    match after {
        None => (SELECT_LISTED, vec![scope.into(), limit]),
        Some(after) => (
            SELECT_LISTED_AFTER,
            vec![
                scope.into(),
                int(after.created_at.as_millis()),
                after.task_id.as_str().into(),
                limit,
            ],
        ),
    }
}

/// The statement and parameters that read up to `limit` tasks of every scope (and of none)
/// strictly after `after`, oldest first; rows as [`task_from_row`] reads.
pub fn every_task_statement(
    after: Option<&ListPosition>,
    limit: usize,
) -> (&'static str, Vec<SqlValue>) {
    let limit = int(u64::try_from(limit).unwrap_or(u64::MAX));
    match after {
        None => (SELECT_EVERY, vec![limit]),
        Some(after) => (
            SELECT_EVERY_AFTER,
            vec![
                int(after.created_at.as_millis()),
                after.task_id.as_str().into(),
                limit,
            ],
        ),
    }
}

/// The parameters of [`GUARD`](super::GUARD) and [`GUARD_AND_BUMP`](super::GUARD_AND_BUMP).
pub fn guard_params(task_id: &str, guard: Guard) -> Vec<SqlValue> {
    vec![
        task_id.into(),
        guard.version.map_or(SqlValue::Null, int),
        guard.generation.map_or(SqlValue::Null, int),
    ]
}
