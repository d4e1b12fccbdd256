//! Fixtures of durable-mcp's own workerd suite for what changes between deploys and what runs
//! after a cancel:
//!
//! | tool | kind | behaviour |
//! | --- | --- | --- |
//! | `order` | task | reserves, says `waiting`, waits `seconds`, charges; the code given to [`add`] decides the body |
//! | `trip` | task | books, registers a release, says `booked`, waits an hour; the release fails for good with `broken_release` |
//! | `gallery` | task | starts one `thumbnail` child per width, says `started n` (meta: the children's ids), waits for them all, answers `total <sum>` (or which child failed) |
//! | `thumbnail` | task | waits `seconds`, answers `{"width": w}` as structured content; a width of 0 fails |
//!
//! `order` comes in two versions, as a deploy would change it: [`Code::First`] charges 100;
//! [`Code::Patched`] adds a tax step behind the patch gate `tax` (before the wait) and a receipt
//! behind `receipt` (after it), so a task in flight from the first version charges 100 with a
//! receipt, and a new one 120. The server's code version names the version.

use std::time::Duration;

use durable_mcp::wire::Json;
use durable_mcp::{McpServer, StepError, TaskContext, TaskError, mcp_task};
use futures_util::future::try_join_all;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which version of `order` the server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// Reserve, wait, charge 100.
    First,
    /// With the tax and receipt patch gates.
    Patched,
}

impl Code {
    /// The version named `name` (`"v2"` is [`Code::Patched`]; anything else the first).
    pub fn named(name: &str) -> Code {
        if name == "v2" {
            Code::Patched
        } else {
            Code::First
        }
    }

    /// The code version tasks record.
    pub fn version(self) -> &'static str {
        match self {
            Code::First => "v1",
            Code::Patched => "v2",
        }
    }
}

/// Adds the fixtures to `server`, with `order` at `code`.
pub fn add(server: McpServer, code: Code) -> McpServer {
    let server = server
        .code_version(code.version())
        .task(trip)
        .task(gallery)
        .task(thumbnail);
    match code {
        Code::First => server.task(order_v1),
        Code::Patched => server.task(order_v2),
    }
}

/// `order`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct Order {
    /// How long to wait between reserving and charging, in seconds.
    seconds: u64,
}

/// Reserves, says `waiting`, waits, then charges 100.
#[mcp_task(name = "order", ttl = "1h", poll_interval = "200ms")]
async fn order_v1(cx: &TaskContext, input: Order) -> Result<String, TaskError> {
    cx.step("reserve", || async { Ok(()) }).await?;
    cx.status("waiting").await?;
    cx.sleep("settle", Duration::from_secs(input.seconds))
        .await?;
    let charged = cx.step("charge", || async { Ok(100) }).await?;
    Ok(format!("charged {charged}"))
}

/// Reserves, adds tax (gated), says `waiting`, waits, sends a receipt (gated), then charges.
#[mcp_task(name = "order", ttl = "1h", poll_interval = "200ms")]
async fn order_v2(cx: &TaskContext, input: Order) -> Result<String, TaskError> {
    cx.step("reserve", || async { Ok(()) }).await?;
    let tax = if cx.patched("tax") {
        cx.step("tax", || async { Ok(20) }).await?
    } else {
        0
    };
    cx.status("waiting").await?;
    cx.sleep("settle", Duration::from_secs(input.seconds))
        .await?;
    let receipt = cx.patched("receipt");
    if receipt {
        cx.step("receipt", || async { Ok(()) }).await?;
    }
    let charged = cx
        .step("charge", move || async move { Ok(100 + tax) })
        .await?;
    Ok(format!("charged {charged} receipt {receipt}"))
}

/// `trip`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct Trip {
    /// Make the release fail on every attempt, so that the cleanup ends at its deadline.
    #[serde(default)]
    broken_release: bool,
    /// Ask `go` and travel once it is answered, instead of waiting an hour.
    #[serde(default)]
    ask: bool,
}

/// Books, registers the booking's release, says `booked`, then waits an hour (or, with `ask`,
/// for an answer to `go`). A cancel runs the release (retried every 300 ms) before the task
/// shows `cancelled`, 2 s at most; an answer after the cancel changes nothing.
#[mcp_task(
    ttl = "1h",
    poll_interval = "200ms",
    cleanup_timeout = "2s",
    retry(limit = 100, delay = "300ms", backoff = "constant", jitter = false)
)]
async fn trip(cx: &TaskContext, input: Trip) -> Result<String, TaskError> {
    let booking = cx
        .step("book", || async { Ok("room-7".to_owned()) })
        .await?;
    let broken = input.broken_release;
    cx.on_cancel("release", move || async move {
        // The application's own event: the log shows it under the task's id.
        tracing::warn!(booking = %booking, "releasing the room");
        if broken {
            return Err(StepError::retryable("the hotel does not answer"));
        }
        Ok(format!("released {booking}"))
    });
    cx.status("booked").await?;
    if input.ask {
        let go = serde_json::json!({
            "mode": "form",
            "message": "Travel now?",
            "requestedSchema": { "type": "object", "properties": { "go": { "type": "boolean" } } },
        });
        cx.elicit("go", go).await?;
    } else {
        cx.sleep("wait", Duration::from_secs(3600)).await?;
    }
    Ok("travelled".to_owned())
}

/// `gallery`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
struct Gallery {
    /// One thumbnail per width.
    widths: Vec<u64>,
    /// How long each thumbnail takes, in seconds.
    seconds: u64,
}

/// `thumbnail`'s arguments (and what it answers).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Thumb {
    /// The width; 0 fails.
    width: u64,
    /// How long it takes, in seconds.
    #[serde(default)]
    seconds: u64,
}

/// Starts a `thumbnail` child per width, says `started n` with their ids, and waits for them all: answers
/// `total <sum of widths>`, or names the child that failed.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn gallery(cx: &TaskContext, input: Gallery) -> Result<String, TaskError> {
    let mut children = Vec::new();
    for width in input.widths {
        let seconds = input.seconds;
        children.push(
            cx.start_child("thumb", thumbnail, Thumb { width, seconds })
                .await?,
        );
    }
    let ids: Vec<&str> = children.iter().map(|child| child.task_id()).collect();
    cx.status(format!("started {}", children.len()))
        .meta(serde_json::json!({ "children": ids }))
        .await?;
    match try_join_all(children.iter().map(|child| child.output::<Thumb>())).await {
        Ok(thumbs) => Ok(format!(
            "total {}",
            thumbs.iter().map(|thumb| thumb.width).sum::<u64>()
        )),
        Err(TaskError::ChildFailed { key, message, .. }) => Ok(format!("{key} failed: {message}")),
        Err(other) => Err(other),
    }
}

/// Waits `seconds`, then answers its width as structured content.
#[mcp_task(ttl = "1h", poll_interval = "200ms")]
async fn thumbnail(cx: &TaskContext, input: Thumb) -> Result<Json<Thumb>, TaskError> {
    if input.width == 0 {
        return Err(TaskError::failed("a width of 0 is no image"));
    }
    cx.sleep("render", Duration::from_secs(input.seconds))
        .await?;
    Ok(Json(input))
}
