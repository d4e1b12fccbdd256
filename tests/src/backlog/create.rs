//! Phase 1: the tasks, created through the MCP endpoint over several keep-alive connections
//! as fast as the host takes them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http::Connection;
use crate::mcp::McpClient;

/// One task of the backlog: its recipient and its id.
#[derive(Clone, Debug)]
pub struct Created {
    /// The unique recipient of its report.
    pub to: String,
    /// The task's id.
    pub id: String,
}

/// The recipient of task number `i`: unique per task, so that the upstream tells tasks apart.
pub(super) fn recipient(i: usize) -> String {
    format!("backlog-{i:06}@example.org")
}

/// How long a creator waits before it asks again after the host refused for being busy
/// (HTTP 429 or 503), unless the host says how long in `Retry-After`.
const BUSY_PAUSE: Duration = Duration::from_millis(50);

/// How often the creation's progress is printed, when asked for.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Creates `count` `send_report` tasks over `connections` connections (one thread each), in
/// the order of their recipients; also returns how many calls the host refused as busy.
/// Prints a progress line every few seconds if `progress` says what else to show in it.
pub(super) fn create_all(
    url: &str,
    address: SocketAddr,
    count: usize,
    connections: usize,
    progress: Option<&dyn Fn() -> String>,
) -> Result<(Vec<Created>, usize), String> {
    let connections = connections.clamp(1, count.max(1));
    let done = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..connections)
        .map(|creator| {
            let url = url.to_owned();
            let done = Arc::clone(&done);
            // Creator `c` takes tasks c, c + n, c + 2n...: all start at once, in order.
            std::thread::spawn(move || -> Result<(Vec<(usize, String)>, usize), String> {
                let client = McpClient::new(&url);
                let mut connection = Connection::open(address).map_err(|e| e.to_string())?;
                let mut refused = 0;
                let mut ids = Vec::new();
                for i in (creator..count).step_by(connections) {
                    let id = create(&client, &mut connection, &recipient(i), &mut refused)?;
                    ids.push((i, id));
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok((ids, refused))
            })
        })
        .collect();
    // Until every creator has finished (no limit: each of their requests has its own time
    // limit), with a progress line now and then; the joins below collect what they made.
    let (started, mut printed) = (Instant::now(), Instant::now());
    crate::wait::within(Duration::MAX, crate::wait::INTERVAL, || {
        if threads.iter().all(|thread| thread.is_finished()) {
            return Some(());
        }
        if let Some(extra) = progress
            && printed.elapsed() >= PROGRESS_EVERY
        {
            printed = Instant::now();
            eprintln!(
                "backlog: {:>6.1} s into the first phase: {} of {count} tasks created; {}",
                started.elapsed().as_secs_f64(),
                done.load(Ordering::Relaxed),
                extra()
            );
        }
        None
    });
    let mut ids = vec![String::new(); count];
    let mut refused = 0;
    for thread in threads {
        let (created, busy) = thread.join().map_err(|_| "a creating thread panicked")??;
        for (i, id) in created {
            ids[i] = id;
        }
        refused += busy;
    }
    let created = ids
        .into_iter()
        .enumerate()
        .map(|(i, id)| Created {
            to: recipient(i),
            id,
        })
        .collect();
    Ok((created, refused))
}

/// Creates the task for `to` on `connection`, asking again while the host says it is busy.
fn create(
    client: &McpClient,
    connection: &mut Connection,
    to: &str,
    refused: &mut usize,
) -> Result<String, String> {
    let params = json!({ "name": "send_report", "arguments": { "to": to } });
    let (body, headers) = client.build("tools/call", params, true);
    let headers = crate::http::borrowed(&headers);
    let body = body.to_string();
    loop {
        let response = connection
            .request("POST", "/mcp", &headers, body.as_bytes())
            .map_err(|e| format!("tools/call for {to} failed: {e}"))?;
        if matches!(response.status, 429 | 503) {
            *refused += 1;
            let pause = response
                .header("retry-after")
                .and_then(|seconds| seconds.trim().parse().ok())
                .map_or(BUSY_PAUSE, Duration::from_secs);
            // What a client is asked to do when refused (the host's `Retry-After`).
            std::thread::sleep(pause);
            continue;
        }
        let answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        let result = &answer["result"];
        return match result["taskId"].as_str() {
            Some(id) if response.status == 200 && result["resultType"] == "task" => {
                Ok(id.to_owned())
            }
            _ => Err(format!(
                "tools/call for {to} created no task: HTTP {} {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            )),
        };
    }
}
