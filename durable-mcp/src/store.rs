//! The storage port, for store authors: what a task's journal needs from a database.
//!
//! A [`Store`] keeps three tables per task (the task row, its steps, its input requests) and
//! applies each activation's writes atomically under a version [`Guard`]. The native host's
//! SQLite store, the Durable Object's and the in-memory store of `testing` implement it; the
//! conformance suite, `testing::store_conformance`, checks a new one against the same cases.

pub use crate::core::{
    Applied, ChildOutcome, Guard, InputRow, ListPage, ListPosition, LoadScope, ParentLink,
    StepKind, StepRow, StepStatus, TaskFailure, TaskRecord, TaskState, Write,
};
pub use crate::runtime::{Store, StoreError};
