//! The ports of one host, bundled.

use std::rc::Rc;

use super::ports::{Clock, Scheduler, Store, Timer};

/// The store, clock, timer and scheduler a host gives the engine.
#[derive(Clone)]
#[allow(missing_debug_implementations)] // trait objects of host adapters
pub struct Host {
    /// Where rows live.
    pub store: Rc<dyn Store>,
    /// What time it is.
    pub clock: Rc<dyn Clock>,
    /// How an activation waits (step timeouts).
    pub timer: Rc<dyn Timer>,
    /// Where each task's next wake-up is set.
    pub scheduler: Rc<dyn Scheduler>,
}
