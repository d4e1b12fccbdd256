//! Listen streams as the bench reads them: the tests' client (`durable_mcp_tests::listen`),
//! whose failures are panics, with each failure turned into an error that says what the
//! stream did.

use durable_mcp_tests::listen::{End, Listen};
use durable_mcp_tests::mcp::McpClient;
use serde_json::{Value, json};
use xtask::Result;
use xtask::process::catch_panic;

/// Opens a stream following `task_ids` at `client`'s endpoint and reads its acknowledgement,
/// which must name every one of them.
pub(super) fn open(client: &McpClient, task_ids: &[&str]) -> Result<Listen> {
    let notifications = json!({ "taskIds": task_ids });
    let mut listen = unpanic("subscriptions/listen", || {
        Listen::open(client, notifications, &[])
    })?;
    let ack = next(&mut listen)?;
    let acknowledged = &ack["params"]["notifications"]["taskIds"];
    if ack["method"] != "notifications/subscriptions/acknowledged"
        || acknowledged.as_array().map(Vec::len) != Some(task_ids.len())
    {
        return Err(format!("the stream following {task_ids:?} began with {ack}").into());
    }
    Ok(listen)
}

/// The stream's next message; an error if the stream ended first.
pub(super) fn next(listen: &mut Listen) -> Result<Value> {
    unpanic("a listen stream", || listen.next_message())?
        .ok_or_else(|| "a listen stream ended before its next message".into())
}

/// The next message, which must be a task notification: the task it carries.
pub(super) fn task(listen: &mut Listen) -> Result<Value> {
    let message = next(listen)?;
    if message["method"] != "notifications/tasks" {
        return Err(format!("a listen stream sent {message}, not a task").into());
    }
    Ok(message["params"].clone())
}

/// Reads task notifications until one says `status`.
pub(super) fn until_status(listen: &mut Listen, status: &str) -> Result<()> {
    while task(listen)?["status"] != status {}
    Ok(())
}

/// Reads the stream to its end, which must be its `complete` response.
pub(super) fn to_end(listen: &mut Listen) -> Result<()> {
    match unpanic("a listen stream", || listen.end())? {
        (_, End::Complete(response)) if response["result"]["resultType"] == "complete" => Ok(()),
        (_, end) => Err(format!("a listen stream ended with {end:?}").into()),
    }
}

/// Runs `f`, a call of the tests' client, turning its panic into an error about `what`.
fn unpanic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T> {
    catch_panic(f).map_err(|message| format!("{what} failed: {message}").into())
}
