//! The native host's log: the engine's `tracing` events, and the application's, on stderr.

use std::fmt;
use std::io::IsTerminal;

use serde_json::Value;
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{Format, Json, JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent};
use tracing_subscriber::registry::LookupSpan;

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
            .fmt_fields(JsonFields::new())
            .event_format(TaskFieldsOnTop(
                tracing_subscriber::fmt::format()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(true),
            ))
            .try_init(),
        other => {
            return Err(HostError::Config(format!(
                "{LOG_FORMAT_VAR}={other:?} is not a log format; use `compact` or `json`"
            )));
        }
    };
    Ok(())
}

/// The JSON format with the task's `task_id`, `tool` and `root_task_id` at the top level of
/// every event inside a task, the application's own included, which otherwise carry them only
/// in `spans`: one filter on `task_id` follows a task through the log, and one on
/// `root_task_id` a task and every task it started, theirs included.
struct TaskFieldsOnTop(Format<Json>);

impl<S, N> FormatEvent<S, N> for TaskFieldsOnTop
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        match serde_json::from_str::<Value>(line.trim_end()) {
            Ok(mut object) => {
                lift_task_fields(&mut object);
                writeln!(writer, "{object}")
            }
            // Never lose an event over the lifting: write it as formatted.
            Err(_) => writer.write_str(&line),
        }
    }
}

/// Copies `task_id`, `tool` and `root_task_id` from the innermost span of `event["spans"]`
/// that has them to the top level, unless the event has its own.
fn lift_task_fields(event: &mut Value) {
    let Some(task) = event["spans"].as_array().and_then(|spans| {
        spans
            .iter()
            .rev()
            .find(|span| span.get("task_id").is_some())
            .cloned()
    }) else {
        return;
    };
    let Some(fields) = event.as_object_mut() else {
        return;
    };
    for name in crate::core::trace::TASK_FIELDS {
        if let Some(value) = task.get(name)
            && !fields.contains_key(name)
        {
            fields.insert(name.to_owned(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::lift_task_fields;

    #[test]
    fn an_event_in_a_task_gets_its_id_and_tool_at_the_top() {
        let mut event = json!({
            "message": "calling upstream",
            "spans": [
                { "name": "task", "task_id": "t1", "tool": "trip", "root_task_id": "r0" },
                { "name": "step", "step": "book" },
            ],
        });
        lift_task_fields(&mut event);
        assert_eq!(
            (&event["task_id"], &event["tool"], &event["root_task_id"]),
            (&json!("t1"), &json!("trip"), &json!("r0"))
        );
    }

    #[test]
    fn an_event_keeps_its_own_fields_and_one_outside_tasks_gains_none() {
        let mut own = json!({ "task_id": "own", "spans": [{ "name": "task", "task_id": "t1", "tool": "trip" }] });
        lift_task_fields(&mut own);
        assert_eq!(
            (&own["task_id"], &own["tool"]),
            (&json!("own"), &json!("trip"))
        );
        let mut outside = json!({ "message": "serving MCP" });
        lift_task_fields(&mut outside);
        assert_eq!(outside, json!({ "message": "serving MCP" }));
    }
}
