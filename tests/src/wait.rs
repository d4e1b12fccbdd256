//! Waiting for a task to get somewhere: polls at a short interval, up to a minute.

use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a wait may take before the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// Reads `read` every 50 ms until `ready` holds of what it read, and returns that; fails the
/// test after a minute, naming `what` and showing the last reading.
pub fn until(what: &str, mut read: impl FnMut() -> Value, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + LIMIT;
    loop {
        let value = read();
        if ready(&value) {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: still waiting; last {value}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
