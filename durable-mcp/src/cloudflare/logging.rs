//! A Worker's log: the engine's `tracing` events, and the application's, written to the
//! console as objects, so that `wrangler tail` shows them and Workers Logs indexes their fields.

use std::cell::Cell;
use std::io;

use tracing::{Level, Metadata};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::prelude::*;
use worker::Env;
use worker::wasm_bindgen::JsValue;
use worker::web_sys::console;

/// The Worker variable holding the log filter, in `RUST_LOG`'s syntax without span filters:
/// a level (`info`) or per-target levels (`info,durable_mcp=debug`).
pub const LOG_FILTER_VAR: &str = "RUST_LOG";

/// The filter when [`LOG_FILTER_VAR`] is not set.
const DEFAULT_FILTER: &str = "info";

thread_local! {
    static INSTALLED: Cell<bool> = const { Cell::new(false) };
}

/// Writes `tracing` events to the console, once per isolate, unless the Worker installed a
/// subscriber of its own first. A malformed filter is reported and the default used.
pub(crate) fn install(env: &Env) {
    if INSTALLED.replace(true) {
        return;
    }
    let configured = env.var(LOG_FILTER_VAR).ok().map(|value| value.to_string());
    let (filter, malformed) = match configured.as_deref().map(str::parse::<Targets>) {
        None => (default_filter(), None),
        Some(Ok(filter)) => (filter, None),
        Some(Err(error)) => (default_filter(), Some(error)),
    };
    let log = tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(true)
        // Workers Logs and `wrangler tail` stamp each line; a Worker's std has no clock.
        .without_time()
        .with_writer(Console);
    // An error means a subscriber is set already: the Worker's own wins.
    if tracing_subscriber::registry()
        .with(log.with_filter(filter))
        .try_init()
        .is_ok()
        && let Some(error) = malformed
    {
        tracing::error!(
            target: crate::core::trace::TARGET,
            value = configured.as_deref().unwrap_or_default(), %error,
            "{LOG_FILTER_VAR} is not a log filter; logging at {DEFAULT_FILTER}"
        );
    }
}

fn default_filter() -> Targets {
    Targets::new().with_default(Level::INFO)
}

/// Hands each formatted event to the console method of its level.
struct Console;

impl<'a> MakeWriter<'a> for Console {
    type Writer = ConsoleLine;

    fn make_writer(&'a self) -> ConsoleLine {
        ConsoleLine::new(Level::INFO)
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> ConsoleLine {
        ConsoleLine::new(*meta.level())
    }
}

/// One event's JSON text, logged when the formatter drops it.
struct ConsoleLine {
    level: Level,
    text: Vec<u8>,
}

impl ConsoleLine {
    fn new(level: Level) -> Self {
        ConsoleLine {
            level,
            text: Vec::new(),
        }
    }
}

impl io::Write for ConsoleLine {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.text.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for ConsoleLine {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let text = text.trim_end();
        if text.is_empty() {
            return;
        }
        // An object, so that its fields are searchable; the text if it does not parse.
        let line = worker::js_sys::JSON::parse(text).unwrap_or_else(|_| JsValue::from_str(text));
        match self.level {
            Level::ERROR => console::error_1(&line),
            Level::WARN => console::warn_1(&line),
            Level::INFO => console::info_1(&line),
            _ => console::debug_1(&line),
        }
    }
}
