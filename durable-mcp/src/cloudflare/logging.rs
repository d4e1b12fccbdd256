//! A Worker's log: the engine's `tracing` events, and the application's, written to the
//! console as objects, so that `wrangler tail` shows them and Workers Logs indexes their fields,
//! or, with `DURABLE_MCP_LOG_FORMAT=json`, as the same objects in one line of JSON text each, so
//! that `wrangler dev` prints one line per event (see [`WorkerLogFormat`]).
//!
//! The subscriber is this module's own rather than `tracing-subscriber`'s: a Worker pays for
//! every byte of its script at each cold start, and the formatter, registry and filter that
//! crate brings add much code for little use here (`cargo xtask size` shows where the script's
//! bytes go, by crate and by function). This one keeps each span's fields until it
//! closes, writes each enabled event as one JSON object (its fields, level, target and the
//! spans it is in), and filters by a `RUST_LOG`-like list of levels per target.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use worker::Env;
use worker::wasm_bindgen::JsValue;
use worker::web_sys::console;

use crate::log_filter::Filter;
use crate::settings::{LOG_FILTER_VAR, WorkerLogFormat};

/// The level when [`LOG_FILTER_VAR`] is not set, for every target.
const DEFAULT_LEVEL: LevelFilter = crate::log_filter::DEFAULT_LEVEL;

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Writes `tracing` events to the console, once per isolate, unless the Worker installed a
/// subscriber of its own first. A malformed filter or format is reported and the default used,
/// while the fetch handler refuses every request over it (see `WorkerSettings`).
pub(crate) fn install(env: &Env) {
    if INSTALLED.swap(true, Ordering::Relaxed) {
        return;
    }
    let configured = env.var(LOG_FILTER_VAR).ok().map(|value| value.to_string());
    let (filter, malformed) = match configured.as_deref().map(Filter::parse) {
        None => (Filter::default(), None),
        Some(Ok(filter)) => (filter, None),
        Some(Err(error)) => (Filter::default(), Some(error)),
    };
    let (format, unknown_format) = match WorkerLogFormat::read(env) {
        Ok(format) => (format, None),
        Err(error) => (WorkerLogFormat::default(), Some(error)),
    };
    let console = ConsoleLog {
        filter,
        format,
        spans: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(1),
    };
    // An error means a subscriber is set already: the Worker's own wins.
    if tracing::subscriber::set_global_default(console).is_err() {
        return;
    }
    if let Some(error) = malformed {
        tracing::error!(
            target: crate::core::trace::TARGET,
            value = configured.as_deref().unwrap_or_default(), error,
            "{LOG_FILTER_VAR} is not a log filter; logging at {DEFAULT_LEVEL}"
        );
    }
    if let Some(error) = unknown_format {
        tracing::error!(target: crate::core::trace::TARGET, "{error}; writing objects");
    }
}

/// A span's name and fields, its parent, and how many handles to it are alive.
struct SpanData {
    name: &'static str,
    fields: Fields,
    parent: Option<u64>,
    handles: usize,
}

/// The subscriber: the filter, the format, and the spans that are open.
struct ConsoleLog {
    filter: Filter,
    format: WorkerLogFormat,
    spans: Mutex<HashMap<u64, SpanData>>,
    next_id: AtomicU64,
}

thread_local! {
    /// The spans entered, innermost last (an isolate runs one thread).
    static ENTERED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl ConsoleLog {
    fn spans(&self) -> std::sync::MutexGuard<'_, HashMap<u64, SpanData>> {
        self.spans
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The span an event or span is in: its explicit parent, none for a root, else the one
    /// entered last.
    fn parent_of(&self, explicit: Option<&Id>, is_root: bool) -> Option<u64> {
        if is_root {
            return None;
        }
        explicit
            .map(Id::into_u64)
            .or_else(|| ENTERED.with(|entered| entered.borrow().last().copied()))
    }
}

impl Subscriber for ConsoleLog {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // The filter never changes once installed: decide each callsite once.
        if self.filter.enabled(*metadata.level(), metadata.target()) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.filter.enabled(*metadata.level(), metadata.target())
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.filter.most_detailed())
    }

    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut fields = Fields::default();
        attributes.record(&mut fields);
        let parent = self.parent_of(attributes.parent(), attributes.is_root());
        let span = SpanData {
            name: attributes.metadata().name(),
            fields,
            parent,
            handles: 1,
        };
        let mut spans = self.spans();
        if let Some(parent) = parent.and_then(|parent| spans.get_mut(&parent)) {
            // A child keeps its parent's data until it closes itself.
            parent.handles += 1;
        }
        spans.insert(id, span);
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(span) = self.spans().get_mut(&span.into_u64()) {
            values.record(&mut span.fields);
        }
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        // In reading order: the level and message first, the spans last.
        let mut line = Fields::default();
        line.push("level", metadata.level().as_str().into());
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some(at) = fields.0.iter().position(|(name, _)| *name == "message") {
            line.0.push(fields.0.remove(at));
        }
        line.0.append(&mut fields.0);
        line.push("target", metadata.target().into());
        let mut scope = Vec::new();
        let spans = self.spans();
        let mut next = self.parent_of(event.parent(), event.is_root());
        while let Some(span) = next.and_then(|id| spans.get(&id)) {
            // The innermost task's id, tool and root at the top too: one filter on `task_id`
            // follows a task, the application's own events included, and one on
            // `root_task_id` a task and its children.
            for (name, value) in &span.fields.0 {
                if crate::core::trace::TASK_FIELDS.contains(name) && !line.has(name) {
                    line.push(name, value.clone());
                }
            }
            let mut entry = Fields::default();
            entry.push("name", span.name.into());
            entry.0.extend(span.fields.0.iter().cloned());
            scope.push(entry.to_json());
            next = span.parent;
        }
        drop(spans);
        if !scope.is_empty() {
            scope.reverse();
            line.push("spans", Value::Array(scope));
        }
        log(*metadata.level(), &line.text(), self.format);
    }

    fn enter(&self, span: &Id) {
        ENTERED.with(|entered| entered.borrow_mut().push(span.into_u64()));
    }

    fn exit(&self, span: &Id) {
        let id = span.into_u64();
        ENTERED.with(|entered| {
            let mut entered = entered.borrow_mut();
            if let Some(at) = entered.iter().rposition(|entered| *entered == id) {
                entered.remove(at);
            }
        });
    }

    fn clone_span(&self, span: &Id) -> Id {
        if let Some(data) = self.spans().get_mut(&span.into_u64()) {
            data.handles += 1;
        }
        span.clone()
    }

    fn try_close(&self, span: Id) -> bool {
        let mut spans = self.spans();
        let mut next = Some(span.into_u64());
        let mut closed = false;
        // Closing a span lets go of its parent's data too.
        while let Some(id) = next {
            next = None;
            let Some(data) = spans.get_mut(&id) else {
                break;
            };
            data.handles -= 1;
            if data.handles == 0 {
                next = data.parent;
                spans.remove(&id);
                closed |= id == span.into_u64();
            }
        }
        closed
    }
}

/// An event's or span's fields in the order they were recorded (a field recorded again takes
/// its new value in place): numbers and booleans as such, the rest as text.
#[derive(Clone, Default)]
struct Fields(Vec<(&'static str, Value)>);

impl Fields {
    fn push(&mut self, name: &'static str, value: Value) {
        match self.0.iter_mut().find(|(known, _)| *known == name) {
            Some((_, old)) => *old = value,
            None => self.0.push((name, value)),
        }
    }

    fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(known, _)| *known == name)
    }

    /// The fields as the text of a JSON object, in their order.
    fn text(&self) -> String {
        let members: Vec<String> = self
            .0
            .iter()
            .map(|(name, value)| format!("{}:{value}", Value::from(*name)))
            .collect();
        format!("{{{}}}", members.join(","))
    }

    fn to_json(&self) -> Value {
        let fields = self
            .0
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()));
        Value::Object(fields.collect())
    }
}

impl Visit for Fields {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field.name(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push(field.name(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push(field.name(), value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field.name(), value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.push(field.name(), format!("{value:?}").into());
    }
}

/// Logs the JSON object `text` (one line: JSON's compact form) with the console method of
/// `level`: as an object (its fields searchable), or as the text itself.
fn log(level: Level, text: &str, format: WorkerLogFormat) {
    let line = match format {
        WorkerLogFormat::Object => {
            worker::js_sys::JSON::parse(text).unwrap_or_else(|_| JsValue::from_str(text))
        }
        WorkerLogFormat::Json => JsValue::from_str(text),
    };
    match level {
        Level::ERROR => console::error_1(&line),
        Level::WARN => console::warn_1(&line),
        Level::INFO => console::info_1(&line),
        _ => console::debug_1(&line),
    }
}
