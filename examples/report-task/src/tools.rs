//! The server's tools, written with the macros: `#[mcp_task]` turns an async fn into a task
//! tool whose input schema comes from its input type, `#[step]` makes an async fn a journaled
//! step. Both have a macro-free equivalent (`TaskTool::new` with a `TaskDefinition`, and
//! `cx.step("name", || async { .. })`); `examples/conformance` uses it where a tool asks for
//! input before its task exists.

use std::sync::OnceLock;

use durable_mcp::core::format_duration;
use durable_mcp::wire::{CallToolResult, ErrorObject, Tool, code};
use durable_mcp::{McpServer, StepError, TaskContext, TaskError, ToolCall, mcp_task, step};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use crate::config::Config;
use crate::upstream::Report;

/// The settings the steps read, set once by [`server`] before any task runs.
static CONFIG: OnceLock<Config> = OnceLock::new();

fn config() -> &'static Config {
    CONFIG
        .get()
        .expect("server() stores the configuration before serving")
}

/// The MCP server with its three tools.
pub fn server(config: Config) -> McpServer {
    // A second call (tests build several servers in one process) keeps the first settings.
    let _ = CONFIG.set(config);
    McpServer::new("report-task", env!("CARGO_PKG_VERSION"))
        .instructions(
            "send_report fetches a recipient's report and sends it after a short cool-off; \
             approve_report asks the user to approve a report; echo repeats its text.",
        )
        .task(send_report)
        .task(approve_report)
        .tool(
            Tool::new(
                "echo",
                json!({
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"],
                }),
            )
            .description("Answers with `text`."),
            |call: ToolCall| async move {
                match call.arguments["text"].as_str() {
                    Some(text) => Ok(CallToolResult::text(text).into()),
                    None => Err(ErrorObject::new(
                        code::INVALID_PARAMS,
                        "echo needs a string argument `text`",
                    )),
                }
            },
        )
}

/// Who receives a report.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendReport {
    /// The recipient: a non-empty string without control characters.
    #[serde(deserialize_with = "recipient")]
    #[schemars(length(min = 1))]
    pub to: String,
}

fn recipient<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let to = String::deserialize(deserializer)?.trim().to_owned();
    if to.is_empty() || to.contains(char::is_control) {
        return Err(serde::de::Error::custom(
            "`to` must be a non-empty string without control characters",
        ));
    }
    Ok(to)
}

/// Fetches the report for `to`, waits a cool-off period, then sends it. Runs as a task: poll
/// it for progress.
///
/// Each step's outcome is journaled, so after a crash or restart the body replays to where it
/// stopped without calling the service again for finished steps.
#[mcp_task(title = "Send a report", poll_interval = "500ms")]
async fn send_report(cx: &TaskContext, input: SendReport) -> Result<String, TaskError> {
    let to = input.to;
    cx.status(format!("fetching the report for {to}")).await;
    let report = fetch(&to).await?;

    let cool_off = config().cool_off;
    cx.status(format!(
        "fetched {} rows of {:?}; cooling off for {}",
        report.rows.len(),
        report.title,
        format_duration(cool_off)
    ))
    .await;
    cx.sleep("cool-off", cool_off).await?;

    cx.status(format!("sending the report to {to}")).await;
    // The same key on every attempt and after every restart: "<task id>:send".
    let key = cx.idempotency_key("send");
    send(&to, &report, &key).await?;

    let done = format!("report sent to {to}");
    cx.status(done.clone()).await;
    Ok(done)
}

/// The report to send to `to`; one call of the service may take 10 s.
#[step(timeout = "10s")]
async fn fetch(to: &str) -> Result<Report, StepError> {
    config().upstream.fetch_report(to).await
}

/// Sends `report`: worth insisting on, ten attempts 0.5 s doubling up to 30 s (about two
/// minutes in all). The idempotency key makes every attempt safe to repeat.
#[step(
    retries(
        limit = 10,
        delay = "500ms",
        backoff = "exponential",
        max_delay = "30s"
    ),
    timeout = "10s"
)]
async fn send(to: &str, report: &Report, key: &str) -> Result<(), StepError> {
    config().upstream.send_report(to, report, key).await
}

/// What to approve.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApproveReport {
    /// What to approve.
    #[serde(default)]
    pub report: Option<String>,
}

/// Asks the user whether a report may go out, and answers with the decision.
#[mcp_task(title = "Approve a report", poll_interval = "500ms")]
async fn approve_report(cx: &TaskContext, input: ApproveReport) -> Result<String, TaskError> {
    let report = input.report.as_deref().unwrap_or("the report");
    let question = json!({
        "mode": "form",
        "message": format!("Approve {report}?"),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": { "type": "boolean", "title": "Approve" },
                "note": { "type": "string", "title": "Note" },
            },
            "required": ["approve"],
        },
    });
    let answer = cx.elicit("approval", question).await?;
    Ok(decision(&answer))
}

/// The decision an elicitation answer (`{"action", "content"}`) carries: only an accepted form
/// with `approve: true` approves; a decline, a cancel or `false` is a plain "not approved".
fn decision(answer: &Value) -> String {
    let content = &answer["content"];
    if answer["action"] != "accept" || content["approve"] != true {
        return "not approved".to_owned();
    }
    match content["note"].as_str().map(str::trim) {
        Some(note) if !note.is_empty() => format!("approved: {note}"),
        _ => "approved".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_accepted_yes_approves() {
        let accept = |content: Value| json!({ "action": "accept", "content": content });
        let yes = accept(json!({ "approve": true, "note": " ship it " }));
        assert_eq!(decision(&yes), "approved: ship it");
        assert_eq!(decision(&accept(json!({ "approve": true }))), "approved");
        assert_eq!(
            decision(&accept(json!({ "approve": false, "note": "x" }))),
            "not approved"
        );
        assert_eq!(
            decision(&accept(json!({ "approve": "true" }))),
            "not approved"
        );
        for action in ["decline", "cancel"] {
            let answer = json!({ "action": action, "content": { "approve": true } });
            assert_eq!(decision(&answer), "not approved");
        }
    }

    #[test]
    fn a_recipient_is_a_trimmed_non_empty_string() {
        let parse = |arguments: Value| serde_json::from_value::<SendReport>(arguments);
        let good = parse(json!({ "to": " ada@example.org " })).unwrap();
        assert_eq!(good.to, "ada@example.org");
        for bad in [
            json!({}),
            json!({ "to": "" }),
            json!({ "to": 7 }),
            json!({ "to": "a\nb" }),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }
}
