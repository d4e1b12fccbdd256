//! One MCP endpoint as the listen bench talks to it: requests on a kept connection (the
//! writes it times go on it), and the tasks and writes it measures.

use std::time::{Duration, Instant};

use durable_mcp_tests::http::Connection;
use durable_mcp_tests::mcp::McpClient;
use serde_json::{Value, json};
use xtask::Result;

use crate::native::load::endpoint;

/// A connection left idle this long is opened again before a timed write: `wrangler dev`
/// closes one idle for about 5 s, and a write must not meet a closed connection.
const IDLE_REOPEN: Duration = Duration::from_secs(1);

/// A write that changes a task a stream follows, and the task it is made on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Write {
    /// `tasks/update` answering `go` of a `watched_errand` waiting at `input_required`.
    Update,
    /// `tasks/cancel` of a `slow_compute` sleeping for longer than the run.
    Cancel,
}

impl Write {
    /// Both, in the order the samples take them.
    pub(super) const ALL: [Write; 2] = [Write::Update, Write::Cancel];

    /// The method, as the tables name the write.
    pub(super) fn method(self) -> &'static str {
        match self {
            Write::Update => "tasks/update",
            Write::Cancel => "tasks/cancel",
        }
    }

    /// The task tool and arguments of the task the write is made on.
    pub(super) fn task(self) -> (&'static str, Value) {
        match self {
            Write::Update => ("watched_errand", json!({ "seconds": 0 })),
            // The longest the fixture accepts: the task sleeps until it is cancelled.
            Write::Cancel => (
                "slow_compute",
                json!({ "seconds": 3000, "label": "listen" }),
            ),
        }
    }

    /// The status the task rests in until the write: the stream reads up to it first.
    pub(super) fn resting(self) -> &'static str {
        match self {
            Write::Update => "input_required",
            Write::Cancel => "working",
        }
    }

    /// The write's params for task `id`.
    pub(super) fn params(self, id: &str) -> Value {
        match self {
            Write::Update => json!({
                "taskId": id,
                "inputResponses": { "go": { "action": "accept", "content": { "go": true } } },
            }),
            Write::Cancel => json!({ "taskId": id }),
        }
    }
}

/// An MCP endpoint and a kept connection to it.
#[derive(Debug)]
pub(super) struct Endpoint {
    client: McpClient,
    path: String,
    connection: Connection,
    /// When the connection last answered.
    used: Instant,
}

impl Endpoint {
    /// Connects to the endpoint at `url` (`http://<ip>:<port>/mcp`).
    pub(super) fn open(url: &str) -> Result<Endpoint> {
        let (address, path) = endpoint(url)?;
        Ok(Endpoint {
            client: McpClient::new(url),
            path,
            connection: Connection::open(address)?,
            used: Instant::now(),
        })
    }

    /// The client, for the streams opened beside the kept connection.
    pub(super) fn client(&self) -> &McpClient {
        &self.client
    }

    /// Opens the connection again if it has been idle long enough for the server to close it;
    /// done before a timed write, so that the time holds no new connection.
    pub(super) fn keep_fresh(&mut self) -> Result<()> {
        if self.used.elapsed() > IDLE_REOPEN {
            self.connection = Connection::open(self.client.address())?;
            self.used = Instant::now();
        }
        Ok(())
    }

    /// One request on the kept connection, the Tasks extension declared: its `result`, or an
    /// error saying what the server answered.
    pub(super) fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let (body, headers) = self.client.build(method, params, true);
        let headers = durable_mcp_tests::http::borrowed(&headers);
        let response = self
            .connection
            .request("POST", &self.path, &headers, body.to_string().as_bytes())
            .map_err(|error| format!("{method}: {error}"))?;
        self.used = Instant::now();
        let answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        match answer.get("result") {
            Some(result) if response.status == 200 => Ok(result.clone()),
            _ => Err(format!(
                "{method} answered HTTP {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            )
            .into()),
        }
    }

    /// Creates the task `write` is made on; its id.
    pub(super) fn create(&mut self, write: Write) -> Result<String> {
        let (tool, arguments) = write.task();
        let created = self.call(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )?;
        match created["taskId"].as_str() {
            Some(id) if created["resultType"] == "task" => Ok(id.to_owned()),
            _ => Err(format!("{tool} created no task: {created}").into()),
        }
    }
}
