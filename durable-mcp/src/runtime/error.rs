//! The errors a task body and its step closures deal in.

use std::fmt;

use crate::core::step_failure::StepFailureKind;

/// A failure a task body sees and may handle: a step that failed for good, or its own.
///
/// Returning one from the body completes the task with a tool error (`isError: true`). Engine
/// failures (non-determinism, a value that cannot be stored) never reach the body as a value:
/// they end the run and fail the task.
///
/// Any error type converts into it with `?`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskError {
    /// A step failed and will not be tried again.
    StepFailed {
        /// The step's journal key.
        step: String,
        /// Why it failed for good.
        kind: StepFailureKind,
        /// How many attempts ran.
        attempts: u32,
        /// The last attempt's error.
        message: String,
    },
    /// The body's own failure.
    Failed(String),
    /// A child task ([`TaskContext::start_child`](crate::TaskContext::start_child)) did not
    /// complete: it failed, was cancelled, completed with a tool error, or could not be
    /// started.
    ChildFailed {
        /// The journal key it was started under.
        key: String,
        /// Its task id.
        task_id: String,
        /// How it ended (`completed` for a tool error).
        status: crate::core::TaskStatus,
        /// What went wrong.
        message: String,
    },
    /// Fails the task (status `failed`) with this JSON-RPC error instead of completing it with
    /// a tool error: for a request the tool cannot serve at all, not for a failure the model
    /// should see and correct.
    Protocol {
        /// The JSON-RPC error code (-32603 for an internal error).
        code: i64,
        /// The error message.
        message: String,
    },
}

impl TaskError {
    /// A failure of the body with this message.
    pub fn failed(message: impl fmt::Display) -> Self {
        TaskError::Failed(message.to_string())
    }

    /// A protocol-level failure of the task with `code` and `message` (see
    /// [`TaskError::Protocol`]).
    pub fn protocol(code: i64, message: impl fmt::Display) -> Self {
        TaskError::Protocol {
            code,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::StepFailed {
                step,
                attempts,
                message,
                ..
            } => {
                let plural = if *attempts == 1 { "" } else { "s" };
                write!(
                    f,
                    "step {step:?} failed after {attempts} attempt{plural}: {message}"
                )
            }
            TaskError::Failed(message) => f.write_str(message),
            TaskError::ChildFailed {
                key,
                task_id,
                status,
                message,
            } => write!(
                f,
                "child task {key:?} ({task_id}) ended {status}: {message}"
            ),
            TaskError::Protocol { code, message } => write!(f, "{message} (error {code})"),
        }
    }
}

impl<E: std::error::Error> From<E> for TaskError {
    fn from(error: E) -> Self {
        TaskError::Failed(error.to_string())
    }
}

/// The error of one step attempt: retried under the step's policy unless marked non-retryable.
///
/// Any error type converts into a retryable one with `?`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepError {
    message: String,
    retryable: bool,
    timed_out: bool,
    /// A journaled step that failed for good, as the task sees it (set by `#[step]` fns, so
    /// that `?` in the body keeps the failure's kind and attempts).
    failed_step: Option<Box<TaskError>>,
}

impl StepError {
    /// A failure worth another attempt.
    pub fn retryable(message: impl fmt::Display) -> Self {
        StepError {
            message: message.to_string(),
            retryable: true,
            timed_out: false,
            failed_step: None,
        }
    }

    /// An attempt that outlasted the step's timeout.
    pub(crate) fn timed_out(message: impl fmt::Display) -> Self {
        StepError {
            timed_out: true,
            ..StepError::retryable(message)
        }
    }

    /// Whether the attempt failed by outlasting the step's timeout.
    pub fn is_timeout(&self) -> bool {
        self.timed_out
    }

    /// A failure that no other attempt can fix: the step fails at once.
    pub fn non_retryable(message: impl fmt::Display) -> Self {
        StepError {
            message: message.to_string(),
            retryable: false,
            timed_out: false,
            failed_step: None,
        }
    }

    /// Whether the step's policy may try again.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl StepError {
    /// The error a `#[step]` fn returns when its journaled step failed for good: not
    /// retryable, and converting back into that `TaskError` with `?`.
    pub(crate) fn failed_for_good(error: TaskError) -> Self {
        StepError {
            message: error.to_string(),
            retryable: false,
            timed_out: false,
            failed_step: Some(Box::new(error)),
        }
    }
}

impl From<StepError> for TaskError {
    /// A step error reaching a task body: the journaled failure it stands for, or the body's
    /// own failure with its message.
    fn from(error: StepError) -> Self {
        match error.failed_step {
            Some(failure) => *failure,
            None => TaskError::Failed(error.message),
        }
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for StepError {
    fn from(error: E) -> Self {
        StepError::retryable(error)
    }
}

/// What a timed elicitation ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElicitOutcome {
    /// The client answered with this response object.
    Answered(serde_json::Value),
    /// The deadline passed first; a later answer is ignored.
    TimedOut,
}
