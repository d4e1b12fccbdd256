//! Real time for the native host: the system clock and tokio timers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::core::Timestamp;
use crate::runtime::{Clock, LocalBoxFuture, Timer};

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the one place the native host reads the clock
    fn now(&self) -> Timestamp {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Timestamp::from_millis(crate::core::time::duration_millis(since_epoch))
    }
}

/// Delays on the tokio runtime the host runs on.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioTimer;

impl Timer for TokioTimer {
    fn delay(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }

    /// Tokio's yield, which wakes the body only after the runtime has polled its I/O driver.
    /// A task that wakes itself at once is run again in the same scheduler tick, up to 61
    /// times before the driver is polled: a body of steps that never wait would then hold a
    /// worker's connections for 61 pacing cycles, not one.
    fn yield_now(&self) -> LocalBoxFuture<'static, ()> {
        Box::pin(tokio::task::yield_now())
    }
}
