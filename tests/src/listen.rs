//! Event streams for tests ([`Events`]), and a `subscriptions/listen` client ([`Listen`]) that
//! opens a stream and reads its JSON-RPC messages as the server sends them, each checked to
//! carry the stream's subscription id.

use serde_json::{Value, json};

use crate::http::{Streaming, borrowed};
use crate::mcp::McpClient;

/// The `_meta` key of the subscription id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How a stream ended.
#[derive(Clone, Debug, PartialEq)]
pub enum End {
    /// With the `complete` response (the server ended it gracefully).
    Complete(Value),
    /// Without a response: the connection closed or broke.
    Dropped,
}

/// The JSON messages of an event stream, read as the server sends them.
#[derive(Debug)]
pub struct Events {
    streaming: Streaming,
    buffer: Vec<u8>,
    ended: bool,
}

impl Events {
    /// The messages of `streaming`, an event stream.
    pub fn new(streaming: Streaming) -> Self {
        let content_type = streaming.header("content-type").unwrap_or_default();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        Events {
            streaming,
            buffer: Vec::new(),
            ended: false,
        }
    }

    /// The next message; `None` once the stream ended (closed, or broken by the server going
    /// away). Comments and events without JSON data are skipped.
    pub fn next_message(&mut self) -> Option<Value> {
        loop {
            if let Some(message) = self.take_message() {
                return Some(message);
            }
            if self.ended {
                return None;
            }
            match self.streaming.next_bytes() {
                Ok(Some(bytes)) => self.buffer.extend(bytes),
                Ok(None) | Err(_) => self.ended = true,
            }
        }
    }

    /// The next whole event's JSON message in the buffer.
    fn take_message(&mut self) -> Option<Value> {
        loop {
            let end = self.buffer.windows(2).position(|pair| pair == b"\n\n")?;
            let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let data: Vec<String> = String::from_utf8_lossy(&event)
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.trim_start().to_owned())
                .collect();
            if let Ok(message) = serde_json::from_str(&data.join("\n")) {
                return Some(message);
            }
        }
    }
}

/// One open listen stream.
#[derive(Debug)]
pub struct Listen {
    events: Events,
    /// The JSON-RPC id the stream was opened with: its subscription id.
    pub id: Value,
    /// The request that opened it, for schema checks.
    pub request: Value,
}

impl Listen {
    /// Opens a stream asking for `notifications` (a `SubscriptionFilter`), with the Tasks
    /// extension declared and `extra` headers added.
    pub fn open(client: &McpClient, notifications: Value, extra: &[(&str, &str)]) -> Listen {
        let params = json!({ "notifications": notifications });
        let (body, mut headers) = client.build("subscriptions/listen", params, true);
        headers.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let streaming =
            client.raw_streaming("POST", &borrowed(&headers), body.to_string().as_bytes());
        assert_eq!(streaming.status, 200, "{:?}", streaming.headers);
        Listen {
            events: Events::new(streaming),
            id: body["id"].clone(),
            request: body,
        }
    }

    /// The next message, checked to carry this stream's id; `None` once the stream ended
    /// (closed, or broken by the server going away).
    pub fn next_message(&mut self) -> Option<Value> {
        let message = self.events.next_message()?;
        let id = match message.get("method") {
            Some(_) => &message["params"]["_meta"][SUBSCRIPTION_ID],
            None => &message["result"]["_meta"][SUBSCRIPTION_ID],
        };
        assert_eq!(id, &self.id, "a frame without the stream's id: {message}");
        Some(message)
    }

    /// The next task notification's task, skipping nothing: anything else fails.
    pub fn task(&mut self) -> Value {
        let message = self.next_message().expect("a task notification");
        assert_eq!(message["method"], "notifications/tasks", "{message}");
        message["params"].clone()
    }

    /// Reads task notifications until one has `status`; every task read, in order.
    pub fn tasks_until(&mut self, status: &str) -> Vec<Value> {
        let mut seen = vec![self.task()];
        while seen.last().unwrap()["status"] != status {
            seen.push(self.task());
        }
        seen
    }

    /// Reads to the end of the stream: how it ended, and the messages before.
    pub fn end(&mut self) -> (Vec<Value>, End) {
        let mut before = Vec::new();
        while let Some(message) = self.next_message() {
            if message.get("method").is_none() {
                assert_eq!(message["id"], self.id, "{message}");
                assert!(self.next_message().is_none(), "a frame after the end");
                return (before, End::Complete(message));
            }
            before.push(message);
        }
        (before, End::Dropped)
    }
}

/// Answers the question `go` of the fixture's `watched_errand` task `id`, so that it goes on.
pub fn answer_errand(client: &McpClient, id: &str) {
    client.result(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "go": {
            "action": "accept", "content": { "go": true } } } }),
    );
}

/// Opens a stream again on the fixture's `watched_errand` task `id`, which waits for its
/// answer (a stream on it was dropped): the stream reads the task as it is now, and once it is
/// answered, follows it to its end, which it says with its complete response.
pub fn reopen_and_finish_errand(client: &McpClient, id: &str) {
    let mut listen = Listen::open(client, json!({ "taskIds": [id] }), &[]);
    listen.next_message().expect("an acknowledgement");
    let now = listen.task();
    assert_eq!(now["status"], "input_required", "{now}");
    assert!(now["inputRequests"]["go"].is_object(), "{now}");
    answer_errand(client, id);
    let done = listen.tasks_until("completed");
    let text = &done.last().unwrap()["result"]["content"][0]["text"];
    assert_eq!(text, "errand done");
    assert!(matches!(listen.end(), (before, End::Complete(_)) if before.is_empty()));
}
