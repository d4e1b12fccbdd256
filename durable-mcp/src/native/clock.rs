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
}
