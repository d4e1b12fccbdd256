//! The example's own settings, read once at start so that a bad value stops the server with a
//! clear message instead of failing every task later.

use std::time::Duration;

use durable_mcp::core::parse_duration;
use durable_mcp::native::HostError;

use crate::upstream::Upstream;

/// Where the report service listens unless `REPORT_API_URL` says otherwise.
pub const DEFAULT_REPORT_API_URL: &str = "http://127.0.0.1:8788";
/// The pause between fetching and sending unless `REPORT_COOL_OFF` says otherwise.
pub const DEFAULT_COOL_OFF: &str = "5s";

/// What the tools need besides their arguments.
#[derive(Clone, Debug)]
pub struct Config {
    /// The report service.
    pub upstream: Upstream,
    /// How long `send_report` sleeps between its two steps.
    pub cool_off: Duration,
}

impl Config {
    /// Reads `REPORT_API_URL` and `REPORT_COOL_OFF`, with their defaults where unset.
    pub fn from_env() -> Result<Self, HostError> {
        let url = var_or("REPORT_API_URL", DEFAULT_REPORT_API_URL)?;
        let upstream = Upstream::new(&url)
            .map_err(|reason| HostError::Config(format!("REPORT_API_URL={url:?} {reason}")))?;
        let cool_off = var_or("REPORT_COOL_OFF", DEFAULT_COOL_OFF)?;
        let cool_off = parse_duration(cool_off.trim())
            .map_err(|error| HostError::Config(format!("REPORT_COOL_OFF: {error}")))?;
        Ok(Config { upstream, cool_off })
    }
}

/// The variable `name`, or `default` when it is unset or empty.
fn var_or(name: &str, default: &str) -> Result<String, HostError> {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => Ok(value),
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(default.to_owned()),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(HostError::Config(format!("{name} is not valid UTF-8")))
        }
    }
}
