//! What bounds each connection of the native host: how long a request may take to arrive,
//! how many connections are open at once, and how the accept loop backs off when the system
//! refuses new sockets.
//!
//! Without these a client that opens a socket and sends nothing (or half a request) holds a
//! file descriptor forever, and enough of them exhaust the process's descriptors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::core::trace;

/// How long a connection may wait for a complete request head unless configured otherwise.
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request body may take to arrive unless configured otherwise.
pub(crate) const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How many connections may be open at once unless configured otherwise: far below the
/// usual limit of 1,024 descriptors, which the database and the runtime share.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The first pause after `accept` fails; it doubles while failures go on.
const FIRST_ACCEPT_PAUSE: Duration = Duration::from_millis(10);
/// The longest pause between failed accepts.
const LONGEST_ACCEPT_PAUSE: Duration = Duration::from_secs(1);

/// The limits every connection is held to; see [`NativeHost`](super::NativeHost)'s setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConnectionLimits {
    /// How long a connection may wait for a complete request head: a new connection that
    /// sends nothing, one kept alive between requests (the idle keep-alive timeout), or one
    /// sending its head too slowly, is closed after this long.
    pub(crate) header_read_timeout: Duration,
    /// How long a request body may take to arrive once its head has; a slower request gets
    /// HTTP 408 and its connection is closed.
    pub(crate) body_read_timeout: Duration,
    /// How many connections may be open at once; at the cap the host accepts no more until
    /// one closes (the operating system queues the rest).
    pub(crate) max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// The open connections of each worker, counted against the host's cap. Shared by the accept
/// loop, which hands each connection to the worker with the fewest, and the workers, whose
/// [`Slot`]s give a place back when their connection closes.
#[derive(Debug)]
pub struct ConnectionSlots {
    open: Vec<AtomicUsize>,
    max: usize,
    freed: Notify,
}

impl ConnectionSlots {
    /// Room for `max` connections (at least one) over `workers` workers (at least one).
    pub fn new(max: usize, workers: usize) -> Arc<Self> {
        Arc::new(ConnectionSlots {
            open: (0..workers.max(1)).map(|_| AtomicUsize::new(0)).collect(),
            max: max.max(1),
            freed: Notify::new(),
        })
    }

    /// A slot for one connection at the worker with the fewest open, once the host is under
    /// its cap; the slot is given back when dropped.
    pub async fn acquire(self: &Arc<Self>) -> Slot {
        loop {
            // Registered before the check, so a slot freed in between is not missed.
            let freed = self.freed.notified();
            if self.total() < self.max {
                let worker = (0..self.open.len())
                    .min_by_key(|worker| self.open[*worker].load(Ordering::Acquire))
                    .expect("at least one worker");
                self.open[worker].fetch_add(1, Ordering::AcqRel);
                return Slot {
                    slots: Arc::clone(self),
                    worker,
                };
            }
            freed.await;
        }
    }

    /// How many connections are open, over every worker.
    pub fn total(&self) -> usize {
        self.open
            .iter()
            .map(|open| open.load(Ordering::Acquire))
            .sum()
    }
}

/// One open connection's place under the cap, at one worker.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<ConnectionSlots>,
    worker: usize,
}

impl Slot {
    /// The worker the connection goes to.
    pub fn worker(&self) -> usize {
        self.worker
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.open[self.worker].fetch_sub(1, Ordering::AcqRel);
        self.slots.freed.notify_one();
    }
}

/// The pause before the next `accept` after failures: doubling from 10 ms to 1 s, so that a
/// process out of descriptors waits for some to close instead of spinning and flooding the
/// log. A success starts it over.
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    failures: u32,
}

impl AcceptBackoff {
    /// An accept succeeded.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// An accept failed with `error`: reports it when the pause grows (not at every
    /// failure), then waits.
    pub async fn wait(&mut self, error: &std::io::Error) {
        let pause = self.next_pause();
        if pause < LONGEST_ACCEPT_PAUSE || self.failures.is_power_of_two() {
            tracing::warn!(
                target: trace::TARGET,
                failures = self.failures, %error, retry_in_ms = pause.as_millis(),
                "accepting a connection failed"
            );
        }
        tokio::time::sleep(pause).await;
    }

    fn next_pause(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let doublings = self.failures.saturating_sub(1).min(16);
        FIRST_ACCEPT_PAUSE
            .saturating_mul(1 << doublings)
            .min(LONGEST_ACCEPT_PAUSE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_pauses_double_up_to_a_second_and_start_over_after_a_success() {
        let mut backoff = AcceptBackoff::default();
        let pauses: Vec<u128> = (0..9).map(|_| backoff.next_pause().as_millis()).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        backoff.reset();
        assert_eq!(backoff.next_pause(), FIRST_ACCEPT_PAUSE);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn slots_hold_the_cap_go_to_the_least_busy_worker_and_free_on_drop() {
        let slots = ConnectionSlots::new(2, 2);
        let first = slots.acquire().await;
        let second = slots.acquire().await;
        assert_eq!((first.worker(), second.worker()), (0, 1));
        assert_eq!(slots.total(), 2);
        let mut third = Box::pin(slots.acquire());
        fn poll<F: Future>(fut: &mut std::pin::Pin<Box<F>>) -> std::task::Poll<F::Output> {
            let waker = std::task::Waker::noop();
            fut.as_mut()
                .poll(&mut std::task::Context::from_waker(waker))
        }
        assert!(poll(&mut third).is_pending());
        drop(first);
        let std::task::Poll::Ready(third) = poll(&mut third) else {
            panic!("a freed slot is taken");
        };
        assert_eq!(third.worker(), 0, "the worker whose connection closed");
        assert_eq!(slots.total(), 2);
    }
}
