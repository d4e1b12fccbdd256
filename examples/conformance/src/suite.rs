//! Fixtures of durable-mcp's own suites (not of the conformance scenarios), on both hosts:
//!
//! | tool | kind | behaviour |
//! | --- | --- | --- |
//! | `short_lived_job` | task | completes at once and is kept 2 s, then purged |
//! | `many_steps` | task | runs `count` no-op steps (status every 10,000), says how many activations it took |
//! | `panicking_job` | task | panics, in its body or in a step (`in_step`) |
//! | `status_meta_job` | task | publishes a status with meta, then one without, and completes |
//! | `watched_errand` | task | says `waiting`, sleeps `seconds`, asks `go`, says `going`, completes |
//! | `touch_resource` | tool | tells the listening clients that the resource `uri` and the resource list changed |
//!
//! The server also reads the caller's principal from the `x-fixture-principal` header (see
//! [`add`]), so that the suites can check what one caller may see of another's tasks.

use std::cell::RefCell;
use std::collections::HashMap;

use durable_mcp::wire::{CallToolResult, Tool};
use durable_mcp::{McpServer, PlainTool, StepError, TaskContext, TaskError, mcp_task};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tasks::NoArguments;

/// The header the fixture takes the caller's principal from. It stands in for a real
/// authorization layer (a fixture trusts its clients; a server never should): a request
/// without it is anonymous.
pub const PRINCIPAL_HEADER: &str = "x-fixture-principal";

/// Adds the fixtures to `server`.
pub fn add(server: McpServer) -> McpServer {
    server
        .task(short_lived_job)
        .task(many_steps)
        .task(panicking_job)
        .task(status_meta_job)
        .task(watched_errand)
        .tool(touch_resource())
        .authenticate(|headers| Ok(headers.get(PRINCIPAL_HEADER)))
}

/// Completes at once; kept for 2 s, then its rows (and its Durable Object's storage) go.
#[mcp_task(ttl = "2s", poll_interval = "200ms")]
async fn short_lived_job(_input: NoArguments) -> Result<String, TaskError> {
    Ok("done".to_owned())
}

/// `many_steps`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct ManySteps {
    /// How many no-op steps to run, one after another.
    count: u32,
}

thread_local! {
    /// How many times each task's body has started in this process (or isolate).
    static ACTIVATIONS: RefCell<HashMap<String, u32>> = RefCell::default();
}

/// Runs `count` journaled no-op steps back to back, publishing its progress every 10,000
/// steps. The answer counts the activations the
/// body needed in this process: more than one means the host handed the run off (or it was
/// restarted). The count is read outside a step on purpose: it is what the test observes.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn many_steps(cx: &TaskContext, input: ManySteps) -> Result<String, TaskError> {
    let activations = ACTIVATIONS.with(|counts| {
        let mut counts = counts.borrow_mut();
        let count = counts.entry(cx.task_id().to_owned()).or_insert(0);
        *count += 1;
        *count
    });
    for done in 0..input.count {
        if done > 0 && done % 10_000 == 0 {
            cx.status(format!("{done} steps done")).await?;
        }
        cx.step("noop", || async { Ok::<_, StepError>(()) }).await?;
    }
    Ok(format!(
        "ran {} steps in {activations} activations",
        input.count
    ))
}

/// `panicking_job`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct Panicking {
    /// Panic inside a step rather than in the body.
    #[serde(default)]
    in_step: bool,
}

/// Panics: a task whose body or step panics ends as a tool error, and the host goes on.
#[mcp_task(ttl = "1h", poll_interval = "200ms", retry(limit = 1))]
async fn panicking_job(cx: &TaskContext, input: Panicking) -> Result<String, TaskError> {
    if input.in_step {
        cx.step("explode", || async {
            if true {
                panic!("a step of panicking_job panicked on purpose");
            }
            Ok::<_, StepError>(())
        })
        .await?;
    }
    panic!("panicking_job panicked on purpose");
}

/// Publishes `warming up` with the meta object `{"phase": "warmup", "lap": 0}`, then
/// `lap 1 done` without meta (which keeps the previous meta), and completes.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn status_meta_job(cx: &TaskContext, _input: NoArguments) -> Result<String, TaskError> {
    cx.status("warming up")
        .meta(serde_json::json!({ "phase": "warmup", "lap": 0 }))
        .await?;
    cx.status("lap 1 done").await?;
    Ok("phases done".to_owned())
}

/// `watched_errand`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct Errand {
    /// How long to sleep before asking, in seconds.
    seconds: u64,
}

/// Goes through every kind of change a client may follow: a status message, a durable sleep,
/// a question (`go`), its answer, another status message, the result.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn watched_errand(cx: &TaskContext, input: Errand) -> Result<String, TaskError> {
    cx.status("waiting").await?;
    cx.sleep("pause", std::time::Duration::from_secs(input.seconds))
        .await?;
    let go = serde_json::json!({
        "mode": "form",
        "message": "Go on?",
        "requestedSchema": { "type": "object", "properties": { "go": { "type": "boolean" } } },
    });
    cx.elicit("go", go).await?;
    cx.status("going").await?;
    Ok("errand done".to_owned())
}

/// Stands for a server whose resources change: tells the clients listening for it that the
/// resource `uri` changed (`notifications/resources/updated`), then that the resource list
/// changed. The fixture's resources stay as they are.
fn touch_resource() -> PlainTool {
    let schema = serde_json::json!({
        "type": "object",
        "properties": { "uri": { "type": "string" } },
        "required": ["uri"],
    });
    let tool = Tool::new("touch_resource", schema)
        .description("Tells the listening clients that a resource and the resource list changed.");
    PlainTool::new(tool, |call| {
        let uri = call.arguments["uri"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        call.notify.resource_updated(&uri);
        call.notify.resources_list_changed();
        let done = CallToolResult::text(format!("{uri} touched"));
        std::future::ready(Ok(done.into()))
    })
}
