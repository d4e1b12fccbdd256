//! The native host's log: the engine's `tracing` events, and the application's, on stderr.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use super::HostError;
use crate::settings::{LOG_FILTER_VAR, LOG_FORMAT_VAR};

/// The filter when `RUST_LOG` is not set: the engine's task-level events (activations,
/// input, cancels, failures, retries) and the application's `info` events.
const DEFAULT_FILTER: &str = "info";

/// Prints `tracing` events on stderr, filtered by `RUST_LOG` and formatted as
/// [`LOG_FORMAT_VAR`] says, unless the process installed a subscriber of its own already (then
/// that one is kept).
pub fn install_from_env() -> Result<(), HostError> {
    let filter = match std::env::var(LOG_FILTER_VAR) {
        Ok(directives) => EnvFilter::try_new(&directives).map_err(|error| {
            HostError::Config(format!(
                "{LOG_FILTER_VAR}={directives:?} is not a log filter ({error}); write a level \
                 (`info`) or per-target levels (`info,durable_mcp=debug`)"
            ))
        })?,
        Err(_) => EnvFilter::new(DEFAULT_FILTER),
    };
    let format = std::env::var(LOG_FORMAT_VAR).unwrap_or_default();
    let log = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // An error here means a subscriber is set already: the application's own wins.
    let _ = match format.trim() {
        "" | "compact" => log
            .compact()
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        "json" => log
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .try_init(),
        other => {
            return Err(HostError::Config(format!(
                "{LOG_FORMAT_VAR}={other:?} is not a log format; use `compact` or `json`"
            )));
        }
    };
    Ok(())
}
