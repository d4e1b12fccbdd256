//! Test support (feature `testing`): virtual time, an in-memory store, a wrapper that lets a
//! test watch or disturb a store's calls, a harness that drives tasks through the real engine,
//! and the conformance suite every store must pass.

mod clock;
mod conformance;
mod harness;
mod memory;
mod observed;

pub use clock::{RecordingScheduler, VIRTUAL_EPOCH, VirtualClock, VirtualTimer};
pub use conformance::store_conformance;
pub use harness::Harness;
pub use memory::MemoryStore;
pub use observed::{ObservedStore, StoreCall, StoreObserver};
