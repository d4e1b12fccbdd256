//! The TaskRunner's settings, read from the Worker's variables (`[vars]` in wrangler.toml, or
//! `wrangler dev --var NAME:VALUE`).

use std::time::Duration;

use worker::Env;

use crate::core::parse_duration;

/// How long an activation may run before it hands off to a fresh alarm invocation. Cloudflare
/// stops an alarm handler after 15 minutes of wall-clock time.
pub const DEFAULT_HAND_OFF: Duration = Duration::from_secs(10 * 60);

/// How long after an activation starts its task runs again if that activation died with its
/// isolate. Longer than the hand-off, so a live activation is never doubled.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15 * 60);

/// The durations a TaskRunner runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `DURABLE_MCP_HAND_OFF`: see [`DEFAULT_HAND_OFF`].
    pub(crate) hand_off: Duration,
    /// `DURABLE_MCP_LEASE`: see [`DEFAULT_LEASE`]. Also how far ahead every alarm handler
    /// first sets its backstop alarm, in case the handler dies.
    pub(crate) lease: Duration,
}

impl Settings {
    /// The settings in `env`; a malformed value is logged and the default used.
    pub(crate) fn from_env(env: &Env) -> Self {
        let hand_off = duration_var(env, "DURABLE_MCP_HAND_OFF", DEFAULT_HAND_OFF);
        let lease = duration_var(env, "DURABLE_MCP_LEASE", DEFAULT_LEASE).max(hand_off);
        Settings { hand_off, lease }
    }
}

fn duration_var(env: &Env, name: &str, default: Duration) -> Duration {
    let Ok(value) = env.var(name) else {
        return default;
    };
    let text = value.to_string();
    match parse_duration(&text) {
        Ok(duration) if !duration.is_zero() => duration,
        Ok(_) => {
            tracing::error!(
                target: crate::core::trace::TARGET,
                "{name} must be longer than zero; using {default:?}"
            );
            default
        }
        Err(error) => {
            tracing::error!(target: crate::core::trace::TARGET,"{name} = {text:?}: {error}; using {default:?}");
            default
        }
    }
}
