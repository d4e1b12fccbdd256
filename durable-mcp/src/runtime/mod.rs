//! The async layer: the step API task bodies use, the activation driver, the engine's control
//! surface, and the ports hosts implement. Executor-agnostic, with no `Send` bound anywhere.

// The Cloudflare host's alarm bookkeeping and timer chunks (wasm32 only), host-neutral and so
// unit-tested natively.
#[cfg_attr(not(cloudflare_host), allow(dead_code))]
pub(crate) mod alarm;
mod context;
mod current;
mod driver;
pub(crate) mod engine;
mod error;
mod host;
mod in_flight;
mod pacer;
pub(crate) mod ports;
mod registry;
pub(crate) mod route;
mod step;
pub(crate) mod watch;

pub use crate::core::step_failure::StepFailureKind;
pub use crate::core::terminal::tool_error_result;
pub use context::{
    ChildTask, ChildTool, Elicit, ElicitWithin, IntoDelay, Status, Step, TaskContext,
};
pub use current::current_context;
pub use engine::{CreateTask, DEFAULT_LEASE, Engine, new_task_id};
pub use error::{ElicitOutcome, StepError, TaskError};
pub use host::Host;
pub use ports::{Clock, LocalBoxFuture, Scheduler, Store, StoreError, Timer};
pub use registry::{TaskDefinition, TaskHandler, TaskOptions, TaskRegistry};
pub use route::{RouteError, TaskRoute};
#[cfg(feature = "testing")]
pub(crate) use step::panic_message as panic_text;
pub use watch::TaskChanges;
