//! Server-sent events: the `text/event-stream` body a POST is answered with when the server
//! has something to say before the result (progress, log messages, requests to the client).

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use serde_json::Value;

/// How long a client waits before it reconnects a dropped stream, in milliseconds (the
/// `retry:` field every stream opens with).
pub const RETRY_MS: u64 = 1000;

/// The body of a streamed answer: SSE frames, each already encoded, ending with the frame
/// that carries the JSON-RPC response.
pub struct EventStream(Pin<Box<dyn Stream<Item = Vec<u8>>>>);

impl EventStream {
    /// The frames `stream` yields, in order.
    pub fn new(stream: impl Stream<Item = Vec<u8>> + 'static) -> Self {
        EventStream(Box::pin(stream))
    }

    /// Every frame, concatenated (for tests, and for hosts that cannot stream).
    pub async fn collect(mut self) -> Vec<u8> {
        let mut body = Vec::new();
        while let Some(frame) = futures_util::StreamExt::next(&mut self).await {
            body.extend(frame);
        }
        body
    }
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventStream(..)")
    }
}

impl Stream for EventStream {
    type Item = Vec<u8>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        self.0.as_mut().poll_next(cx)
    }
}

/// The first frame of a stream: an event id with no data (so that a client may resume after
/// it) and the reconnection delay.
pub fn priming(event_id: &str) -> Vec<u8> {
    format!("id: {event_id}\nretry: {RETRY_MS}\ndata: \n\n").into_bytes()
}

/// One JSON-RPC message as an event.
pub fn message(event_id: &str, message: &Value) -> Vec<u8> {
    format!("id: {event_id}\nevent: message\ndata: {message}\n\n").into_bytes()
}

/// A comment line, which clients ignore: it keeps proxies from closing an idle stream.
pub fn keep_alive() -> Vec<u8> {
    b": keep-alive\n\n".to_vec()
}

/// A stream of `frames` decoded back into the JSON messages its events carry (for tests and
/// clients of the router in the same process).
pub fn parse_messages(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            serde_json::from_str(&data.join("\n")).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_priming_carries_no_message() {
        let mut body = priming("s-0");
        body.extend(keep_alive());
        body.extend(message("s-1", &serde_json::json!({ "a": "b\nc" })));
        assert_eq!(parse_messages(&body), [serde_json::json!({ "a": "b\nc" })]);
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with("id: s-0\nretry: 1000\n"), "{text}");
    }
}
