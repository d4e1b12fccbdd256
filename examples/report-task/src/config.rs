//! The example's own settings, read once at start so that a bad value stops the server with a
//! clear message instead of failing every task later.

use std::time::Duration;

use durable_mcp::parse_duration;

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
    /// Reads `REPORT_API_URL` and `REPORT_COOL_OFF` through `var` (the process environment
    /// natively, the Worker's variables in a Worker), with their defaults where unset or
    /// empty. The error names the variable and what is wrong with it.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var_or = |name: &str, default: &str| {
            var(name)
                .filter(|value| !value.trim().is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        let url = var_or("REPORT_API_URL", DEFAULT_REPORT_API_URL);
        let upstream =
            Upstream::new(&url).map_err(|reason| format!("REPORT_API_URL={url:?} {reason}"))?;
        let cool_off = var_or("REPORT_COOL_OFF", DEFAULT_COOL_OFF);
        let cool_off =
            parse_duration(cool_off.trim()).map_err(|error| format!("REPORT_COOL_OFF: {error}"))?;
        Ok(Config { upstream, cool_off })
    }

    /// [`from_vars`](Config::from_vars) on the process environment.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_env() -> Result<Self, durable_mcp::native::HostError> {
        let var = |name: &str| match std::env::var(name) {
            Ok(value) => Some(value),
            // Not UTF-8: passed on as-is, so the parse error names the variable.
            Err(std::env::VarError::NotUnicode(raw)) => Some(raw.to_string_lossy().into_owned()),
            Err(std::env::VarError::NotPresent) => None,
        };
        Config::from_vars(var).map_err(durable_mcp::native::HostError::Config)
    }
}
