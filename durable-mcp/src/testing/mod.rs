//! Test support (feature `testing`): virtual time, an in-memory store, a harness that drives
//! tasks through the real engine, and the conformance suite every store must pass.

mod clock;
mod conformance;
mod harness;
mod memory;

pub use clock::{RecordingScheduler, VIRTUAL_EPOCH, VirtualClock, VirtualTimer};
pub use conformance::store_conformance;
pub use harness::Harness;
pub use memory::MemoryStore;
