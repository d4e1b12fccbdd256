//! A 2025-era client for the black-box suite, speaking as the v1 TypeScript SDK and the
//! conformance suite's 2025-11-25 scenarios do: `initialize` with no envelope and no
//! `MCP-Protocol-Version`, then every request with the `Mcp-Session-Id` it was issued and the
//! negotiated `MCP-Protocol-Version`; answers read as JSON or as server-sent events, read
//! whole or as they arrive; and the client's own JSON-RPC responses to the server's requests.

use durable_mcp_tests::http::{Response, Streaming};
use durable_mcp_tests::mcp::McpClient;
use serde_json::{Value, json};

use super::Target;

/// The newest 2025 revision, the one with tasks.
pub const V2025: &str = "2025-11-25";

/// The `_meta` key tying a message to the task it concerns.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A client after `initialize` (or a caller that never sent it).
pub struct Session2025 {
    client: McpClient,
    /// The `Mcp-Session-Id` the server issued; `None` for a caller without a session.
    pub id: Option<String>,
    /// The revision sent in `MCP-Protocol-Version`.
    pub version: String,
    /// The `initialize` result (`Null` for a caller without a session).
    pub initialized: Value,
}

/// The body of an `initialize` request asking for `version` and declaring `capabilities`.
pub fn initialize_body(version: &str, capabilities: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": { "name": "durable-mcp-tests-2025", "version": "0" },
        },
    })
}

/// Posts `initialize` as a 2025 client does: no envelope, no `MCP-Protocol-Version`.
pub fn initialize(client: &McpClient, version: &str, capabilities: Value) -> Response {
    client.raw(
        "POST",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        initialize_body(version, capabilities)
            .to_string()
            .as_bytes(),
    )
}

impl Session2025 {
    /// Initializes at 2025-11-25 declaring `capabilities`, then sends
    /// `notifications/initialized`, as the v1 SDK connects.
    pub fn open(target: &Target, capabilities: Value) -> Self {
        let client = McpClient::new(&target.client.url());
        let response = initialize(&client, V2025, capabilities);
        let answer = single_message(&response);
        assert_eq!(response.status, 200, "initialize answered {answer}");
        let initialized = answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("initialize answered without a result: {answer}"));
        let id = response
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("initialize issued no Mcp-Session-Id: {answer}"))
            .to_owned();
        let session = Session2025 {
            client,
            id: Some(id),
            version: initialized["protocolVersion"]
                .as_str()
                .expect("protocolVersion")
                .to_owned(),
            initialized,
        };
        let response =
            session.post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        assert_eq!(response.status, 202, "notifications/initialized");
        session
    }

    /// A 2025 caller that sends `MCP-Protocol-Version: 2025-11-25` but no session (a server
    /// may issue none, and a client then sends none).
    pub fn anonymous(target: &Target) -> Self {
        Session2025 {
            client: McpClient::new(&target.client.url()),
            id: None,
            version: V2025.to_owned(),
            initialized: Value::Null,
        }
    }

    /// The same caller with the session id replaced by `id` (one the server did not issue).
    pub fn with_session_id(target: &Target, id: &str) -> Self {
        let mut session = Self::anonymous(target);
        session.id = Some(id.to_owned());
        session
    }

    /// The headers of every POST of this client.
    pub fn headers(&self) -> Vec<(&str, &str)> {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", self.version.as_str()),
        ];
        if let Some(id) = &self.id {
            headers.push(("Mcp-Session-Id", id.as_str()));
        }
        headers
    }

    /// The HTTP client, for raw requests.
    pub fn client(&self) -> &McpClient {
        &self.client
    }

    /// POSTs any JSON-RPC message with this client's headers.
    pub fn post(&self, message: &Value) -> Response {
        self.client
            .raw("POST", &self.headers(), message.to_string().as_bytes())
    }

    /// A request of `method` with `params`, with a fresh id.
    pub fn request_body(&self, method: &str, params: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": self.client.next_id(), "method": method, "params": params })
    }

    /// Sends a request and reads its whole answer.
    pub fn send(&self, method: &str, params: Value) -> Response {
        self.post(&self.request_body(method, params))
    }

    /// Sends a request and returns the JSON-RPC response to it (from a JSON body, or the last
    /// event of a stream), asserting HTTP 200 and the request's id.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let body = self.request_body(method, params);
        let response = self.post(&body);
        let messages = messages(&response);
        let answer = messages
            .last()
            .cloned()
            .unwrap_or_else(|| panic!("{method} answered {} with nothing", response.status));
        assert_eq!(
            response.status, 200,
            "{method} answered {}: {answer}",
            response.status
        );
        assert_eq!(answer["id"], body["id"], "{method}: {answer}");
        answer
    }

    /// Sends a request and returns its result, panicking on an error.
    pub fn result(&self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} answered without a result: {answer}"))
    }

    /// Sends a request and returns its answer as it arrives.
    pub fn stream(&self, method: &str, params: Value) -> (Value, EventReader) {
        let body = self.request_body(method, params);
        let streaming =
            self.client
                .raw_streaming("POST", &self.headers(), body.to_string().as_bytes());
        (body["id"].clone(), EventReader::new(streaming))
    }

    /// POSTs the client's response to the server's request `id`.
    pub fn respond(&self, id: &Value, result: Value) -> Response {
        self.post(&json!({ "jsonrpc": "2.0", "id": id, "result": result }))
    }

    /// `tools/call` of `tool` as a 2025-11-25 task; returns the `CreateTaskResult`'s task id.
    pub fn create_task(&self, tool: &str, arguments: Value) -> String {
        let result = self.result(
            "tools/call",
            json!({ "name": tool, "arguments": arguments, "task": { "ttl": 60_000 } }),
        );
        result["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool} created no task: {result}"))
            .to_owned()
    }

    /// `tasks/get` of `task_id`.
    pub fn get(&self, task_id: &str) -> Value {
        self.result("tasks/get", json!({ "taskId": task_id }))
    }

    /// Polls `tasks/get` until the status is `status`.
    pub fn wait_for(&self, task_id: &str, status: &str) -> Value {
        let awaited = format!("task {task_id} to become {status}");
        durable_mcp_tests::wait::until(
            &awaited,
            || self.get(task_id),
            |task| task["status"] == status,
        )
    }

    /// Every task `tasks/list` shows this caller, following `nextCursor`; and how many pages
    /// that took.
    pub fn list_all(&self) -> (Vec<Value>, usize) {
        let mut tasks = Vec::new();
        let mut cursor: Option<String> = None;
        for pages in 1..=100 {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let page = self.result("tasks/list", params);
            tasks.extend(page["tasks"].as_array().cloned().unwrap_or_default());
            match page.get("nextCursor") {
                Some(Value::String(next)) => cursor = Some(next.clone()),
                None => return (tasks, pages),
                Some(other) => panic!("nextCursor is not a string: {other}"),
            }
        }
        panic!("tasks/list did not end within 100 pages");
    }
}

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// `id:`
    pub id: Option<String>,
    /// `event:`
    pub event: Option<String>,
    /// The `data:` lines, joined.
    pub data: String,
    /// `retry:`
    pub retry: Option<String>,
}

impl Event {
    /// The JSON-RPC message the event carries; `None` for one without data (priming).
    pub fn message(&self) -> Option<Value> {
        if self.data.trim().is_empty() {
            return None;
        }
        Some(
            serde_json::from_str(&self.data).unwrap_or_else(|error| {
                panic!("event data is not JSON ({error}): {:?}", self.data)
            }),
        )
    }
}

/// Reads one event block; `None` for a block of comments only (a keep-alive).
fn parse_event(block: &str) -> Option<Event> {
    let mut event = Event::default();
    let mut data = Vec::new();
    let mut any = false;
    for line in block.lines() {
        if line.starts_with(':') || line.is_empty() {
            continue;
        }
        any = true;
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => event.id = Some(value.to_owned()),
            "event" => event.event = Some(value.to_owned()),
            "data" => data.push(value),
            "retry" => event.retry = Some(value.to_owned()),
            _ => {}
        }
    }
    event.data = data.join("\n");
    any.then_some(event)
}

/// The events of a whole `text/event-stream` body.
pub fn parse_events(body: &[u8]) -> Vec<Event> {
    String::from_utf8_lossy(body)
        .replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(parse_event)
        .collect()
}

/// Whether a response is a stream of events.
pub fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|value| value.starts_with("text/event-stream"))
}

/// The JSON-RPC messages of a whole answer: its JSON body, or the messages of its events.
pub fn messages(response: &Response) -> Vec<Value> {
    if is_event_stream(response.header("content-type")) {
        return parse_events(&response.body)
            .iter()
            .filter_map(Event::message)
            .collect();
    }
    match response.json() {
        Value::Null => Vec::new(),
        message => vec![message],
    }
}

/// The one message of an answer, asserting there is exactly one.
pub fn single_message(response: &Response) -> Value {
    let mut all = messages(response);
    assert_eq!(all.len(), 1, "expected one message, got {all:?}");
    all.remove(0)
}

/// Asserts that `event` is a priming event: an id to resume after, a reconnection delay, and
/// no message.
pub fn assert_priming(event: &Event) {
    assert!(
        event.id.as_deref().is_some_and(|id| !id.is_empty()),
        "the first event has no id: {event:?}"
    );
    assert!(
        event.retry.is_some(),
        "the first event has no retry: {event:?}"
    );
    assert!(
        event.data.trim().is_empty(),
        "the first event carries data: {event:?}"
    );
}

/// An answer read event by event as it arrives (events end with a blank line, `\n\n`, as
/// this server writes them).
pub struct EventReader {
    streaming: Streaming,
    buffer: Vec<u8>,
    ended: bool,
}

impl EventReader {
    fn new(streaming: Streaming) -> Self {
        EventReader {
            streaming,
            buffer: Vec::new(),
            ended: false,
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.streaming.status
    }

    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.streaming.header(name)
    }

    /// The next event; `None` once the body has ended.
    pub fn next_event(&mut self) -> Option<Event> {
        assert!(
            is_event_stream(self.header("content-type")),
            "not an event stream: {:?}",
            self.streaming.headers
        );
        loop {
            if let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\n\n") {
                let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse_event(&String::from_utf8_lossy(&block)) {
                    return Some(event);
                }
                continue;
            }
            if self.ended {
                return None;
            }
            match self.streaming.next_bytes() {
                Ok(Some(bytes)) => self.buffer.extend(bytes),
                Ok(None) => self.ended = true,
                Err(error) => panic!("reading the event stream failed: {error}"),
            }
        }
    }

    /// The next JSON-RPC message, skipping events without one; `None` once the body ended.
    pub fn next_message(&mut self) -> Option<Value> {
        loop {
            let event = self.next_event()?;
            if let Some(message) = event.message() {
                return Some(message);
            }
        }
    }

    /// Every message left, until the body ends.
    pub fn rest(&mut self) -> Vec<Value> {
        std::iter::from_fn(|| self.next_message()).collect()
    }
}
