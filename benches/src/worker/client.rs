//! The bench's requests: MCP calls and the floors' requests on kept connections to the bench
//! Worker, and calls of the JavaScript floor's object.

use std::time::Duration;

use durable_mcp_tests::http::Connection;
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::WorkerProcess;
use serde_json::{Value, json};
use xtask::Result;

use super::{Bench, Plan};

impl Bench {
    pub(super) fn new(
        worker: &WorkerProcess,
        js_floor: &WorkerProcess,
        plan: Plan,
    ) -> Result<Bench> {
        let client = McpClient::new(&worker.mcp_url());
        let connection = Connection::open(client.address())?;
        let js_address = js_floor
            .url()
            .strip_prefix("http://")
            .ok_or("the JS floor's URL is not http://")?
            .parse()?;
        let js = Connection::open(js_address)?;
        Ok(Bench {
            connection,
            client,
            js,
            js_address,
            plan,
        })
    }

    /// One MCP request on the kept connection; its `result`.
    pub(super) fn mcp(&mut self, method: &str, params: Value) -> Result<Value> {
        let (body, headers) = self.client.build(method, params, true);
        let headers = durable_mcp_tests::http::borrowed(&headers);
        let response = self
            .connection
            .request("POST", "/mcp", &headers, body.to_string().as_bytes())
            .map_err(|error| format!("{method}: {error}"))?;
        let answer = response.json();
        answer
            .get("result")
            .cloned()
            .ok_or_else(|| format!("{method} answered {answer}").into())
    }

    pub(super) fn floor(&mut self, path: &str, method: &str) -> Result<()> {
        self.floor_with(path, method, b"")
    }

    pub(super) fn floor_with(&mut self, path: &str, method: &str, body: &[u8]) -> Result<()> {
        expect_ok(&mut self.connection, method, path, body)
    }

    pub(super) fn create(&mut self, count: u64) -> Result<String> {
        let created = self.mcp(
            "tools/call",
            json!({ "name": "many_steps", "arguments": { "count": count } }),
        )?;
        created["taskId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no task: {created}").into())
    }

    pub(super) fn get(&mut self, id: &str) -> Result<Value> {
        self.mcp("tasks/get", json!({ "taskId": id }))
    }

    /// Creates a `many_steps` task, waits until it is completed, and returns the time from its
    /// creation to its completion as the object's clock recorded them (`createdAt` and
    /// `lastUpdatedAt`, in milliseconds): polling from here neither adds to it nor slows it much.
    pub(super) fn run_to_completion(&mut self, count: u64) -> Result<Duration> {
        let id = self.create(count)?;
        self.wait_completed(&id)
    }

    /// Waits until the task `id` is completed; see [`run_to_completion`](Self::run_to_completion).
    pub(super) fn wait_completed(&mut self, id: &str) -> Result<Duration> {
        loop {
            let task = self.get(id)?;
            match task["status"].as_str() {
                Some("completed") => {
                    let at = |field: &str| {
                        task[field]
                            .as_str()
                            .and_then(epoch_millis)
                            .ok_or_else(|| format!("no {field} in {task}"))
                    };
                    let millis = at("lastUpdatedAt")?.saturating_sub(at("createdAt")?);
                    return Ok(Duration::from_millis(millis));
                }
                Some("working") => std::thread::sleep(Duration::from_millis(20)),
                _ => return Err(format!("many_steps ended otherwise: {task}").into()),
            }
        }
    }
}

/// A call of the JS floor's Durable Object, through its Worker.
#[derive(Clone, Copy)]
pub(super) enum JsCall {
    /// `ping()`, which returns at once.
    Ping,
    /// `insert(body)` of a 120-byte text: one row, one statement.
    Insert,
}

/// The text the JS floor inserts per call: about the size of a no-op step's row.
const JS_ROW: [u8; 120] = [b'x'; 120];

/// One call of the JS floor's object `name` on `connection`.
pub(super) fn js_call(connection: &mut Connection, call: JsCall, name: &str) -> Result<()> {
    match call {
        JsCall::Ping => expect_ok(connection, "GET", &format!("/ping/{name}"), b""),
        JsCall::Insert => expect_ok(connection, "POST", &format!("/insert/{name}"), &JS_ROW),
    }
}

/// One request on `connection`; an error unless it is answered 200.
fn expect_ok(connection: &mut Connection, method: &str, path: &str, body: &[u8]) -> Result<()> {
    let response = connection
        .request(method, path, &[], body)
        .map_err(|error| format!("{method} {path}: {error}"))?;
    if response.status != 200 {
        return Err(format!("{method} {path} answered {}", response.status).into());
    }
    Ok(())
}

/// Milliseconds since the epoch of an RFC 3339 UTC time with milliseconds, as the wire
/// writes them (`2026-11-29T13:03:49.895Z`).
fn epoch_millis(text: &str) -> Option<u64> {
    let (date, time) = text.strip_suffix('Z')?.split_once('T')?;
    let mut date = date.split('-').map(|part| part.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let (hms, millis) = time.split_once('.').unwrap_or((time, "0"));
    let mut hms = hms.split(':').map(|part| part.parse::<i64>().ok());
    let (hours, minutes, seconds) = (hms.next()??, hms.next()??, hms.next()??);
    // Days from the civil date (Howard Hinnant's algorithm).
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hours * 3600 + minutes * 60 + seconds;
    u64::try_from(seconds * 1000 + millis.parse::<i64>().ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::epoch_millis;

    #[test]
    fn wire_times_are_read_as_epoch_milliseconds() {
        assert_eq!(epoch_millis("1970-01-01T00:00:01.250Z"), Some(1250));
        assert_eq!(
            epoch_millis("2026-11-29T13:03:49.895Z"),
            Some(1_795_957_429_895)
        );
        assert_eq!(
            epoch_millis("2024-02-29T23:59:59.001Z"),
            Some(1_709_251_199_001)
        );
        assert_eq!(epoch_millis("2026-11-29 13:03:49Z"), None);
    }
}
