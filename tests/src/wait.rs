//! Waiting for something to happen elsewhere (a task to get somewhere, a process to listen or
//! exit, a file to change): every wait of the tests and of the load generator polls through
//! here, never sleeping a fixed time in the hope that the other side is done by then.
//!
//! [`until`], [`until_some`] and [`until_true`] fail the test after [`LIMIT`], naming what
//! was awaited (and, for [`until`], the last reading); [`within`] is the same wait for code
//! that reports a timeout instead of failing, or must clean up before it fails.

use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a wait may take before the test fails: only against hanging, far beyond what any
/// wait takes on a loaded machine.
pub const LIMIT: Duration = Duration::from_secs(60);

/// How often a wait looks again.
pub const INTERVAL: Duration = Duration::from_millis(50);

/// Reads `read` every [`INTERVAL`] until `ready` holds of what it read, and returns that;
/// fails the test after [`LIMIT`], naming `what` and showing the last reading.
///
/// # Panics
///
/// If `ready` never holds within [`LIMIT`] (or if `read` or `ready` panic).
pub fn until(what: &str, mut read: impl FnMut() -> Value, ready: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let reached = within(LIMIT, INTERVAL, || {
        let value = read();
        if ready(&value) {
            return Some(value);
        }
        last = value;
        None
    });
    reached.unwrap_or_else(|| panic!("{what}: still waiting after {LIMIT:?}; last read {last}"))
}

/// Calls `attempt` every [`INTERVAL`] until it gives something, and returns that; fails the
/// test after [`LIMIT`], naming `what`.
///
/// # Panics
///
/// If `attempt` gives nothing within [`LIMIT`] (or if it panics).
pub fn until_some<T>(what: &str, attempt: impl FnMut() -> Option<T>) -> T {
    within(LIMIT, INTERVAL, attempt)
        .unwrap_or_else(|| panic!("{what}: still waiting after {LIMIT:?}"))
}

/// Checks `check` every [`INTERVAL`] until it holds; fails the test after [`LIMIT`], naming
/// `what`.
///
/// # Panics
///
/// If `check` does not hold within [`LIMIT`] (or if it panics).
pub fn until_true(what: &str, mut check: impl FnMut() -> bool) {
    until_some(what, || check().then_some(()));
}

/// Calls `attempt` every `every` until it gives something, and returns that; `None` once
/// `limit` has passed without (a limit too long to represent never passes). `attempt` runs at
/// least once, and once more after the limit has passed if the last look came before it.
pub fn within<T>(
    limit: Duration,
    every: Duration,
    mut attempt: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now().checked_add(limit);
    loop {
        let looked_at = Instant::now();
        if let Some(value) = attempt() {
            return Some(value);
        }
        if deadline.is_some_and(|deadline| looked_at >= deadline) {
            return None;
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_returns_what_the_attempt_gave_once_it_gives_something() {
        let mut attempts = 0;
        let got = until_some("the third attempt", || {
            attempts += 1;
            (attempts == 3).then_some(attempts)
        });
        assert_eq!(got, 3);
    }

    #[test]
    fn a_wait_without_time_left_looks_once_and_gives_up() {
        let mut attempts = 0;
        let got: Option<()> = within(Duration::ZERO, INTERVAL, || {
            attempts += 1;
            None
        });
        assert_eq!((got, attempts), (None, 1));
    }

    #[test]
    fn a_wait_with_no_representable_end_still_returns_what_it_awaited() {
        let mut attempts = 0;
        let got = within(Duration::MAX, Duration::ZERO, || {
            attempts += 1;
            (attempts == 2).then_some("second")
        });
        assert_eq!(got, Some("second"));
    }
}
