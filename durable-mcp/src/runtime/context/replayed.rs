//! What a body reads that must be the same on every replay: the time, random draws, and the
//! side a patch gate took.

use crate::core::Timestamp;
use crate::core::activation::{Stop, draws};
use crate::runtime::error::TaskError;

use super::TaskContext;

impl TaskContext {
    /// The current time, the same on every replay: the first run reads the host's clock and
    /// records the reading in the journal, and replays return that reading.
    ///
    /// Read the time here, never with `SystemTime::now()` (or `Instant::now()`) in a body: a
    /// body that branches on a fresh clock reading can take another branch when it replays.
    /// Each call is its own record (`$now`, `$now#2`, ... in call order), kept with the step
    /// rows; recording costs no round trip to the store: the record goes out with the next
    /// write the body causes. Inside a step's closure, read the clock directly: the step's
    /// result is what is recorded.
    pub fn now(&self) -> Timestamp {
        let clock = self.now_on_host();
        self.with(|m| m.now(clock))
    }

    /// A random `u64`, the same on every replay.
    ///
    /// The task's first draw records a seed from the OS random source in the journal (under
    /// `$random`); every draw is the next number of the stream that seed fixes, counted in
    /// call order, so a replay draws the same numbers. Use this (and [`random_f64`],
    /// [`random_range`], [`uuid`]) instead of `rand::random()` or `getrandom` in a body. The
    /// stream is not cryptographic and the journal holds its seed: draw secrets (keys,
    /// tokens) inside a step from a cryptographic source instead.
    ///
    /// [`random_f64`]: Self::random_f64
    /// [`random_range`]: Self::random_range
    /// [`uuid`]: Self::uuid
    pub fn random_u64(&self) -> u64 {
        let now = self.now_on_host();
        self.with(|m| m.random(fresh_seed, now))
    }

    /// A random number in `[0, 1)`, the same on every replay (see
    /// [`random_u64`](Self::random_u64)).
    pub fn random_f64(&self) -> f64 {
        draws::unit_interval(self.random_u64())
    }

    /// A random number in `range`, the same on every replay (see
    /// [`random_u64`](Self::random_u64)).
    ///
    /// # Panics
    ///
    /// If `range` is empty.
    pub fn random_range(&self, range: std::ops::Range<u64>) -> u64 {
        assert!(
            range.start < range.end,
            "cx.random_range({range:?}): the range is empty"
        );
        draws::within(self.random_u64(), range)
    }

    /// A random (version 4) UUID, hyphenated in lower case, the same on every replay (see
    /// [`random_u64`](Self::random_u64)): an id for a record the task creates, stable across
    /// retries of the steps that use it.
    pub fn uuid(&self) -> String {
        let high = self.random_u64();
        let low = self.random_u64();
        draws::uuid(high, low)
    }

    /// A patch gate, for changing a body while tasks are in flight: `true` for a task that
    /// reaches this point on code that has the gate, `false` for one that went past it on
    /// older code. The answer is recorded (under `$patch:<id>`), so every replay agrees.
    ///
    /// ```ignore
    /// if cx.patched("tax-step") {
    ///     add_tax(&cx, &order).await?;   // new code: only tasks that reach here now
    /// } else {
    ///     legacy_total(&cx, &order).await?; // what tasks already past this point ran
    /// }
    /// ```
    ///
    /// A task went past the gate on older code when its journal holds a step, sleep or input
    /// that this run has not reached yet: the older run recorded it further on. Call it where
    /// the body runs one branch at a time (not inside a `join!` whose other branches are
    /// still recording). Once no task created before the patch is in flight, replace the
    /// gate by its new side and [`retire_patch`](Self::retire_patch). See "Changing a task's
    /// code" in `docs/deploying.md`.
    pub fn patched(&self, id: &str) -> bool {
        let now = self.now_on_host();
        self.with(|m| m.patched(id, now))
    }

    /// Marks the place of a retired patch gate whose new side is now the only code: a task
    /// that took (or would take) the old side fails here with a message that says so,
    /// instead of diverging further on. Returns that failure for the body to pass on with
    /// `?`; the task fails either way.
    pub fn retire_patch(&self, id: &str) -> Result<(), TaskError> {
        let now = self.now_on_host();
        match self.with(|m| m.retire_patch(id, now)) {
            Ok(()) => Ok(()),
            Err(Stop) => Err(TaskError::failed(format!(
                "the task took the old side of the retired patch {id:?}"
            ))),
        }
    }
}

/// 128 bits from the OS random source: the seed of a task's random draws.
fn fresh_seed() -> Result<u128, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| error.to_string())?;
    Ok(u128::from_le_bytes(bytes))
}
