//! The pure engine: records, journal, replay decisions, scheduling, the tick of a task's
//! wake-up, retry arithmetic, limits and errors.
//!
//! Nothing here does I/O, reads a clock, or depends on an async runtime or a platform crate:
//! time is passed in as a [`Timestamp`], and every decision is a function from loaded rows to
//! the writes a store applies, or a method of one of two state machines: a running body's
//! ([`Activation`]) and a wake-up's ([`Tick`]). It builds for `wasm32-unknown-unknown` as
//! well as natively.
//!
//! [`Activation`]: activation::Activation
//! [`Tick`]: tick::Tick

pub mod activation;
pub mod child;
pub mod control;
pub mod error;
pub mod input;
pub mod journal;
pub mod limits;
pub mod listing;
pub mod outcome;
pub mod own_keys;
pub mod retry;
pub mod schedule;
pub mod schema;
pub mod step_failure;
pub mod task;
pub mod terminal;
#[cfg(test)]
mod test_rows;
pub mod tick;
pub mod time;
pub mod trace;

pub use child::ChildOutcome;
pub use control::{NewTask, TaskSnapshot};
pub use error::{Divergence, EngineError};
pub use journal::{
    Applied, Guard, InputRow, LoadScope, StepKind, StepRow, StepStatus, TaskState, Write,
};
pub use limits::Limits;
pub use listing::{ListPage, ListPosition};
pub use retry::{Backoff, RetryPolicy};
pub use task::{ParentLink, TaskFailure, TaskRecord, TaskStatus};
pub use time::{DurationError, MAX_DURATION, Timestamp, format_duration, parse_duration};
