//! The tasks the native benches measure: `slow_compute` calls that park in a long sleep,
//! created over keep-alive connections, and read back from the store and over HTTP.
//!
//! A task is parked when the store says so (read-only, from the server's SQLite file): status
//! `working`, no activation due or running (`next_run_at` unset), a pending sleep step.

use std::time::{Duration, Instant};

use durable_mcp::TaskStatus;
use durable_mcp::native::NativeHost;
use durable_mcp::store::{StepKind, StepStatus};
use durable_mcp_tests::http::Connection;
use durable_mcp_tests::mcp::McpClient;
use rusqlite::OpenFlags;
use serde_json::{Value, json};
use xtask::Result;
use xtask::server::NativeServer;

use super::load::{authorize, endpoint};

/// How long each task sleeps, in seconds: `slow_compute` refuses more than 3,000 (50 minutes),
/// and a run parks its tasks for a few minutes at most.
const PARK_SECONDS: u64 = 3_000;

/// How long every created task should take to park, at most.
const PARK_LIMIT: Duration = Duration::from_secs(300);

/// Creates `count` `slow_compute` tasks that sleep [`PARK_SECONDS`], over `connections`
/// keep-alive connections (one thread each), each request with the `bearer` token if one is
/// given, and returns their ids.
pub(super) fn create_tasks(
    server: &NativeServer,
    bearer: Option<&str>,
    count: usize,
    connections: usize,
) -> Result<Vec<String>> {
    let (address, path) = endpoint(server.url())?;
    let threads: Vec<_> = (0..connections)
        .map(|creator| {
            let share = count / connections + usize::from(creator < count % connections);
            let (url, path) = (server.url().to_owned(), path.clone());
            let bearer = bearer.map(str::to_owned);
            std::thread::spawn(move || -> Result<Vec<String>, String> {
                let client = McpClient::new(&url);
                let mut connection = Connection::open(address).map_err(|e| e.to_string())?;
                (0..share)
                    .map(|_| create_task(&client, &mut connection, &path, bearer.as_deref()))
                    .collect()
            })
        })
        .collect();
    let mut ids = Vec::with_capacity(count);
    for thread in threads {
        ids.extend(thread.join().map_err(|_| "a creating thread panicked")??);
    }
    Ok(ids)
}

/// Creates one task on `connection`, with the `bearer` token if one is given, and returns its
/// id.
fn create_task(
    client: &McpClient,
    connection: &mut Connection,
    path: &str,
    bearer: Option<&str>,
) -> Result<String, String> {
    let arguments = json!({ "seconds": PARK_SECONDS, "label": "bench" });
    let params = json!({ "name": "slow_compute", "arguments": arguments });
    let (body, mut headers) = client.build("tools/call", params, true);
    authorize(&mut headers, bearer);
    let headers = durable_mcp_tests::http::borrowed(&headers);
    let response = connection
        .request("POST", path, &headers, body.to_string().as_bytes())
        .map_err(|e| format!("tools/call failed: {e}"))?;
    let answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    match answer["result"]["taskId"].as_str() {
        Some(id) if response.status == 200 && answer["result"]["resultType"] == "task" => {
            Ok(id.to_owned())
        }
        _ => Err(format!(
            "tools/call created no task: HTTP {} {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        )),
    }
}

/// Waits until the store holds `count` parked tasks, reading the server's SQLite file.
pub(super) fn wait_parked(server: &NativeServer, count: usize) -> Result<()> {
    let database = server.state_dir().join(NativeHost::DATABASE_FILE);
    let connection =
        rusqlite::Connection::open_with_flags(database, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    connection.busy_timeout(Duration::from_secs(5))?;
    let mut parked = connection.prepare(
        "SELECT count(*) FROM task WHERE status = ?1 AND next_run_at IS NULL AND EXISTS \
         (SELECT 1 FROM steps WHERE steps.task_id = task.task_id AND kind = ?2 AND status = ?3)",
    )?;
    let deadline = Instant::now() + PARK_LIMIT;
    loop {
        let now: usize = parked.query_row(
            [
                TaskStatus::Working.as_str(),
                StepKind::Sleep.as_str(),
                StepStatus::Pending.as_str(),
            ],
            |row| row.get(0),
        )?;
        if now == count {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{now} of {count} tasks parked after {} s",
                PARK_LIMIT.as_secs()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks over HTTP that every `step`-th task of `ids` is `working`.
pub(super) fn check_working(server: &NativeServer, ids: &[String], step: usize) -> Result<()> {
    let client = McpClient::new(server.url());
    let (address, path) = endpoint(server.url())?;
    let mut connection = Connection::open(address)?;
    for id in ids.iter().step_by(step) {
        let (body, headers) = client.build("tasks/get", json!({ "taskId": id }), true);
        let headers = durable_mcp_tests::http::borrowed(&headers);
        let response = connection.request("POST", &path, &headers, body.to_string().as_bytes())?;
        let answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        if response.status != 200 || answer["result"]["status"] != "working" {
            return Err(format!(
                "task {id} is not working: HTTP {} {answer}",
                response.status
            )
            .into());
        }
    }
    Ok(())
}
