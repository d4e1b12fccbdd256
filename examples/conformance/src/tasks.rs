//! The fixtures of the Tasks extension scenarios (`tasks-*`):
//!
//! | tool | kind | behaviour |
//! | --- | --- | --- |
//! | `greet` | plain | `Hello, {name}!` |
//! | `slow_compute` | task, optional | sleeps `seconds`, then `computed {label}` |
//! | `failing_job` | task, required | after 1 s, a tool error (`isError: true`) |
//! | `protocol_error_job` | task, required | fails with a JSON-RPC error |
//! | `confirm_delete` | task, optional | asks to confirm, answers `deleted={confirm}` |
//! | `multi_input` | task, optional | asks two questions at once, answers with both |
//! | `ask_twice` | task, optional | asks a name, then a colour, answers with both (for durable-mcp's own suite) |
//! | `test_tool_with_task` | task, required | asks `user_name` before the task (MRTR), greets it |
//! | `expiring_job` | task, optional | kept 1 s but sleeps an hour: expires (for durable-mcp's own suite) |

use std::time::Duration;

use durable_mcp::Preparation;
use durable_mcp::wire::{CallToolResult, ErrorObject, InputRequiredResult, code};
use durable_mcp::{
    McpServer, TaskContext, TaskDefinition, TaskError, TaskTool, ToolCall, mcp_task, tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::schema::{form, object};

/// Adds the Tasks extension fixtures to `server`. `greet` comes first: header-validation
/// scenarios call the first listed tool with no arguments.
///
/// `greet` is a `#[tool]` fn and the task fixtures are `#[mcp_task]` fns; `test_tool_with_task` is registered through plain
/// Rust because it asks for input before its task exists (a `prepare` hook).
pub fn add(server: McpServer) -> McpServer {
    server
        .tool(greet)
        .task(slow_compute)
        .task(failing_job)
        .task(protocol_error_job)
        .task(confirm_delete)
        .task(multi_input)
        .task(ask_twice)
        .task(
            TaskTool::new(
                TaskDefinition::new("test_tool_with_task", |cx, input| {
                    Box::pin(greet_task(cx, input))
                })
                .ttl(Some(Duration::from_secs(3600)))
                .poll_interval(Duration::from_millis(200)),
                object(json!({})),
            )
            .description("Asks for a name before starting a task that greets it.")
            .prepare(ask_name_first)
            .required(),
        )
        .task(expiring_job)
}

/// `greet`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct Greet {
    /// Whom to greet (default: the world).
    #[serde(default)]
    name: Option<String>,
}

/// Greets someone at once.
#[tool]
async fn greet(input: Greet) -> String {
    format!("Hello, {}!", input.name.as_deref().unwrap_or("world"))
}

/// The longest `slow_compute` computes: its task lives an hour.
const MAX_COMPUTE_SECONDS: f64 = 3_000.0;

/// `slow_compute`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct SlowCompute {
    /// How long to compute, in seconds (0 to 3000).
    #[serde(default = "one_second", deserialize_with = "compute_seconds")]
    #[schemars(range(min = 0.0, max = 3000.0))]
    seconds: f64,
    /// What to answer with.
    #[serde(default)]
    label: String,
}

fn one_second() -> f64 {
    1.0
}

/// A number of seconds in `0..=MAX_COMPUTE_SECONDS`; anything else (negative, huge, not a
/// number) is refused before a task exists, naming the range.
fn compute_seconds<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let seconds = f64::deserialize(deserializer)?;
    if !(0.0..=MAX_COMPUTE_SECONDS).contains(&seconds) {
        return Err(serde::de::Error::custom(format_args!(
            "`seconds` must be between 0 and {MAX_COMPUTE_SECONDS}, got {seconds}"
        )));
    }
    Ok(seconds)
}

/// No arguments (any given are ignored).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoArguments {}

/// Computes for `seconds`, then answers with `label`.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn slow_compute(cx: &TaskContext, input: SlowCompute) -> Result<String, TaskError> {
    cx.sleep("compute", Duration::from_secs_f64(input.seconds))
        .await?;
    Ok(format!("computed {}", input.label))
}

/// Fails after a second with a tool error.
#[mcp_task(required, ttl = "1h", poll_interval = "200ms")]
async fn failing_job(cx: &TaskContext, _input: NoArguments) -> Result<String, TaskError> {
    cx.sleep("work", Duration::from_secs(1)).await?;
    Err(TaskError::failed("the job failed (as designed)"))
}

/// Fails with a JSON-RPC error.
#[mcp_task(required, ttl = "1h", poll_interval = "200ms")]
async fn protocol_error_job(cx: &TaskContext, _input: NoArguments) -> Result<String, TaskError> {
    cx.sleep("work", Duration::from_millis(200)).await?;
    Err(TaskError::protocol(
        code::INTERNAL_ERROR,
        "simulated protocol error",
    ))
}

/// `confirm_delete`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct ConfirmDelete {
    /// The file to delete.
    #[serde(default)]
    filename: Option<String>,
}

/// Asks for confirmation before deleting `filename`.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn confirm_delete(cx: &TaskContext, input: ConfirmDelete) -> Result<String, TaskError> {
    let filename = input.filename.as_deref().unwrap_or("the file");
    let question = form(
        &format!("Delete {filename}?"),
        json!({ "confirm": { "type": "boolean" } }),
    );
    let answer = cx.elicit("confirm", question).await?;
    let confirmed = answer["action"] == "accept" && answer["content"]["confirm"] == true;
    Ok(format!("deleted={confirmed}"))
}

/// Asks two questions at once.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn multi_input(cx: &TaskContext, _input: NoArguments) -> Result<String, TaskError> {
    let name = form("Your name?", json!({ "name": { "type": "string" } }));
    let colour = form(
        "Your favourite colour?",
        json!({ "colour": { "type": "string" } }),
    );
    // Both questions are outstanding together; the task resumes when both are answered.
    let (name, colour) =
        futures_util::future::join(cx.elicit("name", name), cx.elicit("colour", colour)).await;
    let (name, colour) = (name?, colour?);
    Ok(format!(
        "name={} colour={}",
        name["content"]["name"].as_str().unwrap_or("?"),
        colour["content"]["colour"].as_str().unwrap_or("?")
    ))
}

/// Asks for a name, then, once it has it, for a colour.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn ask_twice(cx: &TaskContext, _input: NoArguments) -> Result<String, TaskError> {
    let name = cx
        .elicit(
            "name",
            form("Your name?", json!({ "name": { "type": "string" } })),
        )
        .await?;
    let name = name["content"]["name"].as_str().unwrap_or("?").to_owned();
    let question = format!("Your favourite colour, {name}?");
    let colour = cx
        .elicit(
            "colour",
            form(&question, json!({ "colour": { "type": "string" } })),
        )
        .await?;
    let colour = colour["content"]["colour"].as_str().unwrap_or("?");
    Ok(format!("name={name} colour={colour}"))
}

/// Is kept for a second but sleeps an hour, so it expires.
#[mcp_task(ttl = "1s", poll_interval = "200ms")]
async fn expiring_job(cx: &TaskContext, _input: NoArguments) -> Result<String, TaskError> {
    cx.sleep("forever", Duration::from_secs(3600)).await?;
    Ok("woke up".to_owned())
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
