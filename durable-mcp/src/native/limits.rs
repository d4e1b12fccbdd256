//! What bounds each connection of the native host: how long a request may take to arrive,
//! how many connections are open at once, and how the accept loop backs off when the system
//! refuses new sockets.
//!
//! Without these a client that opens a socket and sends nothing (or half a request) holds a
//! file descriptor forever, and enough of them exhaust the process's descriptors.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::Notify;

/// How long a connection may wait for a complete request head unless configured otherwise.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request body may take to arrive unless configured otherwise.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How many connections may be open at once unless configured otherwise: far below the
/// usual limit of 1,024 descriptors, which the database and the runtime share.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The first pause after `accept` fails; it doubles while failures go on.
const FIRST_ACCEPT_PAUSE: Duration = Duration::from_millis(10);
/// The longest pause between failed accepts.
const LONGEST_ACCEPT_PAUSE: Duration = Duration::from_secs(1);

/// The limits every connection is held to; see [`NativeHost`](super::NativeHost)'s setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a connection may wait for a complete request head: a new connection that
    /// sends nothing, one kept alive between requests (the idle keep-alive timeout), or one
    /// sending its head too slowly, is closed after this long.
    pub header_read_timeout: Duration,
    /// How long a request body may take to arrive once its head has; a slower request gets
    /// HTTP 408 and its connection is closed.
    pub body_read_timeout: Duration,
    /// How many connections may be open at once; at the cap the host accepts no more until
    /// one closes (the operating system queues the rest).
    pub max_connections: usize,
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

/// The open connections, counted against the cap.
#[derive(Debug)]
pub struct ConnectionSlots {
    open: Cell<usize>,
    max: usize,
    freed: Notify,
}

impl ConnectionSlots {
    /// Room for `max` connections (at least one).
    pub fn new(max: usize) -> Rc<Self> {
        Rc::new(ConnectionSlots {
            open: Cell::new(0),
            max: max.max(1),
            freed: Notify::new(),
        })
    }

    /// A slot for one connection, once one is free; the slot is given back when dropped.
    pub async fn acquire(self: &Rc<Self>) -> Slot {
        loop {
            // Registered before the check, so a slot freed in between is not missed.
            let freed = self.freed.notified();
            if self.open.get() < self.max {
                self.open.set(self.open.get() + 1);
                return Slot(Rc::clone(self));
            }
            freed.await;
        }
    }

    /// How many connections are open.
    #[cfg(test)]
    pub fn open(&self) -> usize {
        self.open.get()
    }
}

/// One open connection's place under the cap.
#[derive(Debug)]
pub struct Slot(Rc<ConnectionSlots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.set(self.0.open.get() - 1);
        self.0.freed.notify_one();
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
            eprintln!(
                "durable-mcp: accept failed ({} in a row): {error}; retrying in {} ms",
                self.failures,
                pause.as_millis()
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
    async fn slots_hold_the_cap_and_free_on_drop() {
        let slots = ConnectionSlots::new(2);
        let first = slots.acquire().await;
        let _second = slots.acquire().await;
        assert_eq!(slots.open(), 2);
        let mut third = Box::pin(slots.acquire());
        fn poll<F: Future>(fut: &mut std::pin::Pin<Box<F>>) -> std::task::Poll<F::Output> {
            let waker = std::task::Waker::noop();
            fut.as_mut()
                .poll(&mut std::task::Context::from_waker(waker))
        }
        assert!(poll(&mut third).is_pending());
        drop(first);
        let third = poll(&mut third);
        assert!(third.is_ready());
        assert_eq!(slots.open(), 2);
    }
}
