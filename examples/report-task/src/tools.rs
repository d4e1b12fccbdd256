//! The server's tools, written with the macros: `#[mcp_task]` turns an async fn into a task
//! tool whose input schema comes from its input type, `#[tool]` does the same for a tool that
//! answers at once, and `#[step]` makes an async fn a journaled step. Each has a macro-free
//! equivalent (`TaskTool::new` with a `TaskDefinition`, `PlainTool::new`, and
//! `cx.step("name", || async { .. })`); `examples/conformance` uses them where a tool asks for
//! input before its task exists or needs a schema written by hand.

use std::sync::OnceLock;

use durable_mcp::format_duration;
use durable_mcp::{McpServer, StepError, TaskContext, TaskError, mcp_task, step, tool};
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
             approve_report compiles it and sends it only if the user approves; echo repeats \
             `m`.",
        )
        .task(send_report)
        .task(approve_report)
        .tool(echo)
}

/// What `echo` repeats.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Echo {
    /// The text to answer with.
    pub m: String,
}

/// Answers with `m`. A plain tool: it answers at once, without a task.
#[tool(annotations(read_only, idempotent, open_world = false))]
async fn echo(input: Echo) -> String {
    input.m
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
    cx.status(format!("fetching the report for {to}")).await?;
    let report = fetch(&to).await?;

    let cool_off = config().cool_off;
    cx.status(format!(
        "fetched {} rows of {:?}; cooling off for {}",
        report.rows.len(),
        report.title,
        format_duration(cool_off)
    ))
    .await?;
    cx.sleep("cool-off", cool_off).await?;

    deliver(cx, &to, &report).await
}

/// Sends `report` to `to` and answers what was done, telling the client as it goes.
async fn deliver(cx: &TaskContext, to: &str, report: &Report) -> Result<String, TaskError> {
    cx.status(format!("sending the report to {to}")).await?;
    // The same key on every attempt and after every restart: "<task id>:send".
    let key = cx.idempotency_key("send");
    send(to, report, &key).await?;
    let done = format!("report {:?} sent to {to}", report.title);
    cx.status(done.clone()).await?;
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
    retry(
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

/// Compiles the report for `to`, asks the user whether to send it, and sends it only on an
/// accepted form whose `approve` is `true`; otherwise discards it.
#[mcp_task(title = "Approve and send a report", poll_interval = "500ms")]
async fn approve_report(cx: &TaskContext, input: SendReport) -> Result<String, TaskError> {
    let to = input.to;
    cx.status(format!("compiling the report for {to}")).await?;
    let report = fetch(&to).await?;

    cx.status(format!("waiting for approval to send {:?}", report.title))
        .await?;
    let question = json!({
        "mode": "form",
        "message": format!("Send {:?} to {to}?", report.title),
        "requestedSchema": {
            "type": "object",
            "properties": { "approve": { "type": "boolean", "title": "Send it" } },
            "required": ["approve"],
        },
    });
    let answer = cx.elicit("approval", question).await?;
    if !approved(&answer) {
        let done = format!("report {:?} discarded", report.title);
        cx.status(done.clone()).await?;
        return Ok(done);
    }

    deliver(cx, &to, &report).await
}

/// Whether an elicitation answer (`{"action", "content"}`) approves: only an accepted form with
/// `approve: true`. A decline, a cancel, `false` or anything else discards the report.
fn approved(answer: &Value) -> bool {
    answer["action"] == "accept" && answer["content"]["approve"] == true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_accepted_yes_approves() {
        let accept = |content: Value| json!({ "action": "accept", "content": content });
        assert!(approved(&accept(json!({ "approve": true }))));
        assert!(!approved(&accept(json!({ "approve": false }))));
        assert!(!approved(&accept(json!({ "approve": "true" }))));
        assert!(!approved(&accept(json!({}))));
        for action in ["decline", "cancel"] {
            let answer = json!({ "action": action, "content": { "approve": true } });
            assert!(!approved(&answer), "{action}");
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
