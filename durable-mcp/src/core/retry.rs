//! Retry policy and backoff: pure arithmetic, no clock and no randomness of its own.

use std::time::Duration;

use super::time::duration_millis;

/// How the delay grows from one failed attempt to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backoff {
    /// Always `delay`.
    Constant,
    /// `delay * n` after the n-th failed attempt.
    Linear,
    /// `delay * 2^(n-1)` after the n-th failed attempt.
    Exponential,
}

/// When and how often a failing step is tried again.
///
/// `limit` counts attempts, the first included: `limit = 1` never retries. The delay after the
/// n-th failed attempt follows `backoff`, is capped at `max_delay`, and with `jitter` is spread
/// over its upper half (`[d/2, d]`) so that many tasks failing together do not retry together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub limit: u32,
    /// The base delay.
    pub delay: Duration,
    /// How the delay grows.
    pub backoff: Backoff,
    /// The longest delay between two attempts.
    pub max_delay: Duration,
    /// Spread each delay over `[d/2, d]`.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    /// [`RetryPolicy::DEFAULT`].
    fn default() -> Self {
        RetryPolicy::DEFAULT
    }
}

/// A retry policy that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid retry policy: {0}")]
pub struct RetryPolicyError(pub &'static str);

impl RetryPolicy {
    /// Five attempts, 1 s doubling up to 5 minutes, with jitter.
    pub const DEFAULT: RetryPolicy = RetryPolicy {
        limit: 5,
        delay: Duration::from_secs(1),
        backoff: Backoff::Exponential,
        max_delay: Duration::from_secs(300),
        jitter: true,
    };

    /// A policy that tries once and never again.
    pub fn never() -> Self {
        RetryPolicy {
            limit: 1,
            ..RetryPolicy::default()
        }
    }

    /// Checks the policy's fields; the builders of the runtime call this before using one.
    pub fn validate(&self) -> Result<(), RetryPolicyError> {
        if self.limit == 0 {
            return Err(RetryPolicyError(
                "limit counts attempts including the first, so it must be at least 1",
            ));
        }
        if self.max_delay < self.delay {
            return Err(RetryPolicyError("max_delay must not be shorter than delay"));
        }
        Ok(())
    }

    /// Whether another attempt may follow the failed attempt number `attempt` (1-based).
    pub fn allows_retry_after(&self, attempt: u32) -> bool {
        attempt < self.limit
    }

    /// The delay after failed attempt number `attempt` (1-based).
    ///
    /// `spread` is a number in `[0, 1)` that picks the point inside the jitter window; callers
    /// derive it deterministically from the task and step, so that replays and tests agree.
    pub fn delay_after(&self, attempt: u32, spread: f64) -> Duration {
        let base = duration_millis(self.delay);
        let step = u64::from(attempt.max(1));
        let raw = match self.backoff {
            Backoff::Constant => base,
            Backoff::Linear => base.saturating_mul(step),
            Backoff::Exponential => {
                let factor = 1u64.checked_shl(attempt.max(1) - 1).unwrap_or(u64::MAX);
                base.saturating_mul(factor)
            }
        };
        let capped = raw.min(duration_millis(self.max_delay));
        if !self.jitter {
            return Duration::from_millis(capped);
        }
        let half = capped / 2;
        let spread = spread.clamp(0.0, 1.0);
        let extra = ((capped - half) as f64 * spread).round() as u64;
        Duration::from_millis(half + extra)
    }
}

/// A stable pseudo-random number in `[0, 1)` for the jitter of one step attempt.
///
/// Derived from the task id, the step key and the attempt with FNV-1a, so the delay is the same
/// every time it is computed (no random source in the core) yet differs between tasks.
pub fn jitter_fraction(task_id: &str, step_key: &str, attempt: u32) -> f64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = task_id
        .bytes()
        .chain([0])
        .chain(step_key.bytes())
        .chain(attempt.to_le_bytes());
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(backoff: Backoff) -> RetryPolicy {
        RetryPolicy {
            limit: 10,
            delay: Duration::from_secs(1),
            backoff,
            max_delay: Duration::from_secs(10),
            jitter: false,
        }
    }

    fn delays(policy: RetryPolicy) -> Vec<u64> {
        (1..=5)
            .map(|n| duration_millis(policy.delay_after(n, 0.0)))
            .collect()
    }

    #[test]
    fn backoff_shapes() {
        assert_eq!(delays(policy(Backoff::Constant)), [1000; 5]);
        assert_eq!(
            delays(policy(Backoff::Linear)),
            [1000, 2000, 3000, 4000, 5000]
        );
        assert_eq!(
            delays(policy(Backoff::Exponential)),
            [1000, 2000, 4000, 8000, 10000]
        );
    }

    #[test]
    fn huge_attempt_numbers_saturate_at_the_cap() {
        let p = policy(Backoff::Exponential);
        assert_eq!(p.delay_after(200, 0.0), Duration::from_secs(10));
        assert_eq!(
            policy(Backoff::Linear).delay_after(u32::MAX, 0.0),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn jitter_stays_in_the_upper_half() {
        let p = RetryPolicy {
            jitter: true,
            ..policy(Backoff::Constant)
        };
        assert_eq!(p.delay_after(1, 0.0), Duration::from_millis(500));
        assert_eq!(p.delay_after(1, 1.0), Duration::from_millis(1000));
        for attempt in 1..50 {
            let spread = jitter_fraction("task", "step", attempt);
            assert!((0.0..1.0).contains(&spread));
            let d = duration_millis(p.delay_after(attempt, spread));
            assert!((500..=1000).contains(&d), "{d}");
        }
    }

    #[test]
    fn jitter_is_stable_and_varies_between_tasks() {
        assert_eq!(jitter_fraction("a", "s", 1), jitter_fraction("a", "s", 1));
        assert_ne!(jitter_fraction("a", "s", 1), jitter_fraction("b", "s", 1));
    }

    #[test]
    fn limit_counts_attempts() {
        let p = RetryPolicy {
            limit: 3,
            ..RetryPolicy::default()
        };
        assert!(p.allows_retry_after(1));
        assert!(p.allows_retry_after(2));
        assert!(!p.allows_retry_after(3));
        assert!(!RetryPolicy::never().allows_retry_after(1));
    }

    #[test]
    fn validation() {
        assert!(RetryPolicy::default().validate().is_ok());
        let zero = RetryPolicy {
            limit: 0,
            ..RetryPolicy::default()
        };
        assert!(zero.validate().is_err());
        let inverted = RetryPolicy {
            max_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        };
        assert!(inverted.validate().is_err());
    }
}
