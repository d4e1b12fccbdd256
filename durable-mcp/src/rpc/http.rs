//! The HTTP exchange the router works on, free of any HTTP library: hosts convert their
//! platform's request into an [`HttpRequest`] and write the [`HttpResponse`] back.

use super::sse::EventStream;

/// Request headers, names lowercased.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    /// Headers from `(name, value)` pairs in any case.
    pub fn new<N: AsRef<str>, V: Into<String>>(pairs: impl IntoIterator<Item = (N, V)>) -> Self {
        Headers(
            pairs
                .into_iter()
                .map(|(name, value)| (name.as_ref().to_ascii_lowercase(), value.into()))
                .collect(),
        )
    }

    /// Headers from text of lines that alternate a name and its value, each line ended by a
    /// line feed (`"accept\n*/*\nhost\nexample.com\n"`), as a host that reads its platform's
    /// headers in one call writes them. Neither a name nor a value can hold a line feed; a name
    /// without a value line is dropped.
    pub fn from_lines(text: &str) -> Self {
        let mut lines = text.split('\n');
        Headers::new(std::iter::from_fn(|| Some((lines.next()?, lines.next()?))))
    }

    /// Every value of `name` (any case), in the order received.
    pub fn all<'h>(&'h self, name: &'h str) -> impl Iterator<Item = &'h str> + 'h {
        self.0
            .iter()
            .filter(move |(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The value of `name` (any case); repeated headers are joined with `", "`, as HTTP
    /// combines them.
    pub fn get(&self, name: &str) -> Option<String> {
        let mut values = self
            .0
            .iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str());
        let first = values.next()?;
        Some(values.fold(first.to_owned(), |joined, next| joined + ", " + next))
    }
}

/// One HTTP request to the MCP endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpRequest {
    /// `POST`, `GET`, ...
    pub method: String,
    /// Its headers.
    pub headers: Headers,
    /// Its body.
    pub body: Vec<u8>,
}

/// The router's answer.
#[derive(Debug)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Headers to send (`content-type`, `allow`).
    pub headers: Vec<(&'static str, String)>,
    /// The body (empty for 202 and 405, and when [`events`](Self::events) is set).
    pub body: Vec<u8>,
    /// A streamed body (`text/event-stream`) to send as it comes, instead of `body`.
    pub events: Option<EventStream>,
}

impl HttpResponse {
    /// A JSON body with `status`.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        HttpResponse::json_text(status, body.to_string().into_bytes())
    }

    /// A body of JSON text with `status`.
    pub fn json_text(status: u16, body: Vec<u8>) -> Self {
        HttpResponse {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body,
            events: None,
        }
    }

    /// A `text/event-stream` answer whose events `events` yields.
    pub fn events(events: EventStream) -> Self {
        HttpResponse {
            status: 200,
            headers: vec![
                ("content-type", "text/event-stream".to_owned()),
                ("cache-control", "no-cache".to_owned()),
                // A buffering proxy would hold the events back until the stream ends.
                ("x-accel-buffering", "no".to_owned()),
            ],
            body: Vec::new(),
            events: Some(events),
        }
    }

    /// The whole body: `body`, or every event of a stream once it has ended (for tests and
    /// hosts that cannot stream).
    pub async fn into_body(self) -> Vec<u8> {
        match self.events {
            Some(events) => events.collect().await,
            None => self.body,
        }
    }

    /// A whole body of `content_type` with `status`: a page, a script, a picture.
    pub fn content(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        HttpResponse {
            status,
            headers: vec![("content-type", content_type.to_owned())],
            body: body.into(),
            events: None,
        }
    }

    /// A response with no body.
    pub fn empty(status: u16) -> Self {
        HttpResponse {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            events: None,
        }
    }

    /// HTTP 413 for a body over `limit` bytes, with a JSON-RPC error saying so.
    pub fn too_large(limit: usize) -> Self {
        let error = crate::wire::ErrorObject::new(
            crate::wire::code::INVALID_REQUEST,
            format!("the request body is larger than the limit of {limit} bytes"),
        );
        HttpResponse::json(413, &crate::wire::jsonrpc::failure(None, &error))
    }

    /// The body parsed as JSON (`Null` when empty or not JSON); for tests and logs.
    pub fn json_body(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_lines_pairs_each_name_with_the_line_after_it() {
        let headers = Headers::from_lines("Accept\n*/*\nx-empty\n\nvia\na, b: c\nvia\nd\n");
        assert_eq!(headers.get("accept").as_deref(), Some("*/*"));
        assert_eq!(headers.get("x-empty").as_deref(), Some(""));
        assert_eq!(headers.get("via").as_deref(), Some("a, b: c, d"));
        assert_eq!(Headers::from_lines(""), Headers::default());
        assert_eq!(Headers::from_lines("dangling"), Headers::default());
    }
}
