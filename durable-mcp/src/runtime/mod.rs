//! The async layer: the step API task bodies use, the activation driver, the engine's control
//! surface, and the ports hosts implement. Executor-agnostic, with no `Send` bound anywhere.

mod alarm;
mod context;
mod current;
mod driver;
mod engine;
mod error;
mod host;
mod pacer;
mod ports;
mod registry;
mod step;

pub use crate::core::replay::StepFailureKind;
pub use alarm::AlarmMemory;
pub use context::{IntoDelay, Step, TaskContext};
pub use current::current_context;
pub use driver::tool_error_result;
pub use engine::{CreateTask, DEFAULT_LEASE, Engine, new_task_id};
pub use error::{ElicitOutcome, StepError, TaskError};
pub use host::Host;
pub use ports::{
    Clock, DelayChunks, LocalBoxFuture, Scheduler, Store, StoreError, Timer, delay_chunks,
};
pub use registry::{TaskDefinition, TaskHandler, TaskOptions, TaskRegistry};
#[cfg(feature = "testing")]
pub(crate) use step::panic_message as panic_text;
