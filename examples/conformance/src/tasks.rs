//! The fixtures of the Tasks extension scenarios (`tasks-*`):
//!
//! | tool | kind | behaviour |
//! | --- | --- | --- |
//! | `greet` | plain | `Hello, {name}!` |
//! | `slow_compute` | task, optional | sleeps `seconds`, then `computed {label}` |
//! | `failing_job` | task, required | after 1 s, a tool error (`isError: true`) |
//! | `protocol_error_job` | task, required | fails with a JSON-RPC error |
//! | `confirm_delete` | task | asks to confirm, answers `deleted={confirm}` |
//! | `multi_input` | task | asks two questions at once, answers with both |
//! | `test_tool_with_task` | task, required | asks `user_name` before the task (MRTR), greets it |
//! | `expiring_job` | task | kept 1 s but sleeps an hour: expires (for durable-mcp's own suite) |

use std::time::Duration;

use durable_mcp::rpc::Preparation;
use durable_mcp::runtime::LocalBoxFuture;
use durable_mcp::wire::{CallToolResult, ErrorObject, InputRequiredResult, Tool, code};
use durable_mcp::{McpServer, TaskContext, TaskDefinition, TaskError, TaskTool, ToolCall};
use serde_json::{Value, json};

use crate::schema::{form, object};

/// Adds the Tasks extension fixtures to `server`. `greet` comes first: header-validation
/// scenarios call the first listed tool with no arguments.
pub fn add(server: McpServer) -> McpServer {
    server
        .tool(
            Tool::new("greet", object(json!({ "name": { "type": "string" } })))
                .description("Greets someone at once."),
            |call: ToolCall| async move {
                let name = call.arguments["name"]
                    .as_str()
                    .unwrap_or("world")
                    .to_owned();
                Ok(CallToolResult::text(format!("Hello, {name}!")).into())
            },
        )
        .task(
            task("slow_compute", |cx, input| {
                Box::pin(slow_compute(cx, input))
            })
            .optional()
            .description("Computes for `seconds`, then answers with `label`."),
        )
        .task(
            task("failing_job", |cx, _| Box::pin(failing_job(cx)))
                .description("Fails after a second with a tool error."),
        )
        .task(
            task("protocol_error_job", |cx, _| {
                Box::pin(protocol_error_job(cx))
            })
            .description("Fails with a JSON-RPC error."),
        )
        .task(
            task("confirm_delete", |cx, input| {
                Box::pin(confirm_delete(cx, input))
            })
            .description("Asks for confirmation before deleting `filename`."),
        )
        .task(
            task("multi_input", |cx, _| Box::pin(multi_input(cx)))
                .description("Asks two questions at once."),
        )
        .task(
            task("test_tool_with_task", |cx, input| {
                Box::pin(greet_task(cx, input))
            })
            .description("Asks for a name before starting a task that greets it.")
            .prepare(ask_name_first),
        )
        .task(
            TaskTool::new(
                TaskDefinition::new("expiring_job", |cx, _| Box::pin(outlive_ttl(cx)))
                    .ttl(Some(Duration::from_secs(1)))
                    .poll_interval(Duration::from_millis(200)),
                object(json!({})),
            )
            .description("Is kept for a second but sleeps an hour, so it expires."),
        )
}

async fn outlive_ttl(cx: &TaskContext) -> Result<Value, TaskError> {
    cx.sleep("forever", Duration::from_secs(3600)).await?;
    Ok(CallToolResult::text("woke up").into_value())
}

/// A task tool running `body`, kept an hour and polled every 200 ms.
pub fn task(
    name: &str,
    body: impl for<'a> Fn(&'a TaskContext, Value) -> LocalBoxFuture<'a, Result<Value, TaskError>>
    + 'static,
) -> TaskTool {
    let definition = TaskDefinition::new(name, body)
        .ttl(Some(Duration::from_secs(3600)))
        .poll_interval(Duration::from_millis(200));
    TaskTool::new(definition, object(json!({})))
}

async fn slow_compute(cx: &TaskContext, input: Value) -> Result<Value, TaskError> {
    let seconds = input["seconds"].as_f64().unwrap_or(1.0).max(0.0);
    cx.sleep("compute", Duration::from_secs_f64(seconds))
        .await?;
    let label = input["label"].as_str().unwrap_or_default();
    Ok(CallToolResult::text(format!("computed {label}")).into_value())
}

async fn failing_job(cx: &TaskContext) -> Result<Value, TaskError> {
    cx.sleep("work", Duration::from_secs(1)).await?;
    Err(TaskError::failed("the job failed (as designed)"))
}

async fn protocol_error_job(cx: &TaskContext) -> Result<Value, TaskError> {
    cx.sleep("work", Duration::from_millis(200)).await?;
    Err(TaskError::protocol(
        code::INTERNAL_ERROR,
        "simulated protocol error",
    ))
}

async fn confirm_delete(cx: &TaskContext, input: Value) -> Result<Value, TaskError> {
    let filename = input["filename"].as_str().unwrap_or("the file");
    let question = form(
        &format!("Delete {filename}?"),
        json!({ "confirm": { "type": "boolean" } }),
    );
    let answer = cx.elicit("confirm", question).await?;
    let confirmed = answer["action"] == "accept" && answer["content"]["confirm"] == true;
    Ok(CallToolResult::text(format!("deleted={confirmed}")).into_value())
}

async fn multi_input(cx: &TaskContext) -> Result<Value, TaskError> {
    let name = form("Your name?", json!({ "name": { "type": "string" } }));
    let colour = form(
        "Your favourite colour?",
        json!({ "colour": { "type": "string" } }),
    );
    // Both questions are outstanding together; the task resumes when both are answered.
    let (name, colour) =
        futures_util::future::join(cx.elicit("name", name), cx.elicit("colour", colour)).await;
    let (name, colour) = (name?, colour?);
    Ok(CallToolResult::text(format!(
        "name={} colour={}",
        name["content"]["name"].as_str().unwrap_or("?"),
        colour["content"]["colour"].as_str().unwrap_or("?")
    ))
    .into_value())
}

/// Round one of `test_tool_with_task` asks for a name; round two starts the task with it.
fn ask_name_first(call: &ToolCall) -> Result<Preparation, ErrorObject> {
    match call.input_response("user_name") {
        Some(answer) => Ok(Preparation::Start(json!({
            "name": answer["content"]["name"].as_str().unwrap_or("stranger"),
        }))),
        None => Ok(Preparation::InputRequired(
            InputRequiredResult::default()
                .elicit(
                    "user_name",
                    form(
                        "What is your name?",
                        json!({ "name": { "type": "string" } }),
                    ),
                )
                .state("round-1"),
        )),
    }
}

async fn greet_task(cx: &TaskContext, input: Value) -> Result<Value, TaskError> {
    let name = input["name"].as_str().unwrap_or("stranger").to_owned();
    cx.sleep("think", Duration::from_millis(100)).await?;
    Ok(CallToolResult::text(format!("Hello, {name}, from a task!")).into_value())
}
