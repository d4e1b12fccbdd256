//! The server's tools: two task tools and a plain one, with hand-written input schemas.

use std::rc::Rc;
use std::time::Duration;

use durable_mcp::core::{Backoff, RetryPolicy, format_duration};
use durable_mcp::rpc::Preparation;
use durable_mcp::wire::{CallToolResult, ErrorObject, Tool, code};
use durable_mcp::{McpServer, TaskContext, TaskDefinition, TaskError, TaskTool, ToolCall};
use serde_json::{Value, json};

use crate::config::Config;
use crate::upstream::Report;

/// How long one call of the report service may take before the attempt counts as failed.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// Sending is worth insisting on: ten attempts, 0.5 s doubling up to 30 s (about two minutes
/// in all). The idempotency key makes every attempt safe to repeat.
const SEND_RETRY: RetryPolicy = RetryPolicy {
    limit: 10,
    delay: Duration::from_millis(500),
    backoff: Backoff::Exponential,
    max_delay: Duration::from_secs(30),
    jitter: true,
};

/// The MCP server with its three tools.
pub fn server(config: Config) -> McpServer {
    let config = Rc::new(config);
    McpServer::new("report-task", env!("CARGO_PKG_VERSION"))
        .instructions(
            "send_report fetches a recipient's report and sends it after a short cool-off; \
             approve_report asks the user to approve a report; echo repeats its text.",
        )
        .task(
            TaskTool::new(
                TaskDefinition::new("send_report", move |cx, input| {
                    let config = Rc::clone(&config);
                    Box::pin(async move { send_report(cx, &config, input).await })
                })
                .poll_interval(Duration::from_millis(500)),
                object_schema(
                    json!({
                        "to": { "type": "string", "minLength": 1, "description": "The recipient." },
                    }),
                    &["to"],
                ),
            )
            .title("Send a report")
            .description(
                "Fetches the report for `to`, waits a cool-off period, then sends it. Runs as a \
                 task: poll it for progress.",
            )
            .prepare(check_recipient),
        )
        .task(
            TaskTool::new(
                TaskDefinition::new("approve_report", |cx, input| {
                    Box::pin(approve_report(cx, input))
                })
                .poll_interval(Duration::from_millis(500)),
                object_schema(
                    json!({ "report": { "type": "string", "description": "What to approve." } }),
                    &[],
                ),
            )
            .title("Approve a report")
            .description(
                "Asks the user whether a report may go out, and answers with the decision.",
            ),
        )
        .tool(
            Tool::new(
                "echo",
                object_schema(json!({ "text": { "type": "string" } }), &["text"]),
            )
            .description("Answers with `text`."),
            |call: ToolCall| async move {
                match call.arguments["text"].as_str() {
                    Some(text) => Ok(CallToolResult::text(text).into()),
                    None => Err(invalid_params("echo needs a string argument `text`")),
                }
            },
        )
}

/// Fetch, cool off, send. Each step's outcome is journaled, so after a crash or restart the
/// body replays to where it stopped without calling the service again for finished steps.
async fn send_report(cx: &TaskContext, config: &Config, input: Value) -> Result<Value, TaskError> {
    // `check_recipient` vetted the arguments; this only reads them.
    let to = input["to"].as_str().unwrap_or_default().to_owned();
    let upstream = &config.upstream;

    cx.status(format!("fetching the report for {to}")).await;
    let report: Report = cx
        .step("fetch", || upstream.fetch_report(&to))
        .timeout(UPSTREAM_TIMEOUT)
        .await?;

    cx.status(format!(
        "fetched {} rows of {:?}; cooling off for {}",
        report.rows.len(),
        report.title,
        format_duration(config.cool_off)
    ))
    .await;
    cx.sleep("cool-off", config.cool_off).await?;

    cx.status(format!("sending the report to {to}")).await;
    // The same key on every attempt and after every restart: "<task id>:send".
    let key = cx.idempotency_key("send");
    cx.step("send", || upstream.send_report(&to, &report, &key))
        .retry(SEND_RETRY)
        .timeout(UPSTREAM_TIMEOUT)
        .await?;

    let done = format!("report sent to {to}");
    cx.status(done.clone()).await;
    Ok(CallToolResult::text(done).into_value())
}

/// Refuses a `send_report` call without a usable recipient before any task exists.
fn check_recipient(call: &ToolCall) -> Result<Preparation, ErrorObject> {
    match call.arguments["to"].as_str().map(str::trim) {
        Some(to) if !to.is_empty() && !to.contains(char::is_control) => {
            Ok(Preparation::Start(json!({ "to": to })))
        }
        _ => Err(invalid_params(
            "send_report needs `to`, a non-empty string without control characters",
        )),
    }
}

/// Asks for approval and answers with what the user decided.
async fn approve_report(cx: &TaskContext, input: Value) -> Result<Value, TaskError> {
    let report = input["report"].as_str().unwrap_or("the report");
    let question = json!({
        "mode": "form",
        "message": format!("Approve {report}?"),
        "requestedSchema": object_schema(
            json!({
                "approve": { "type": "boolean", "title": "Approve" },
                "note": { "type": "string", "title": "Note" },
            }),
            &["approve"],
        ),
    });
    let answer = cx.elicit("approval", question).await?;
    Ok(CallToolResult::text(decision(&answer)).into_value())
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

/// An object schema with `properties`, `required` naming the mandatory ones.
fn object_schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn invalid_params(message: &str) -> ErrorObject {
    ErrorObject::new(code::INVALID_PARAMS, message)
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
    fn a_recipient_is_required() {
        let call = |arguments: Value| ToolCall {
            arguments,
            ..ToolCall::default()
        };
        assert_eq!(
            check_recipient(&call(json!({ "to": " ada@example.org " }))),
            Ok(Preparation::Start(json!({ "to": "ada@example.org" })))
        );
        for bad in [
            json!({}),
            json!({ "to": "" }),
            json!({ "to": 7 }),
            json!({ "to": "a\nb" }),
        ] {
            assert!(check_recipient(&call(bad)).is_err());
        }
    }
}
