//! The router's answer as an `http::Response`, for hyper (the host's own connections) and for
//! the application's server (a mounted endpoint): its status and headers, and its body whole
//! or as server-sent events written as they come.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body::{Frame, SizeHint};

use crate::rpc::HttpResponse;
use crate::rpc::sse::EventStream;

/// A response body: the whole of it, or the events `E` yields (dropped with the connection
/// when the client goes away, which ends the stream's work).
pub(super) enum Body<E> {
    Whole(Option<Bytes>),
    Events(E),
}

/// `response` as an `http::Response`, its event stream (if it has one) turned into the body's
/// stream by `events`.
pub(super) fn respond<E>(
    response: HttpResponse,
    events: impl FnOnce(EventStream) -> E,
) -> http::Response<Body<E>> {
    let HttpResponse {
        status,
        headers,
        body,
        events: stream,
    } = response;
    let body = match stream {
        Some(stream) => Body::Events(events(stream)),
        None => Body::Whole(Some(Bytes::from(body))),
    };
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    let head = response.headers_mut();
    for (name, value) in headers {
        if let Ok(value) = http::HeaderValue::try_from(value) {
            head.append(name, value);
        }
    }
    response
}

impl<E: Stream<Item = Bytes> + Unpin> http_body::Body for Body<E> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frame = |bytes: Bytes| Ok(Frame::data(bytes));
        match self.get_mut() {
            Body::Whole(body) => Poll::Ready(body.take().map(frame)),
            Body::Events(events) => events.poll_next_unpin(cx).map(|event| event.map(frame)),
        }
    }

    // A whole body has a known size, so the server frames it with Content-Length, not chunks.
    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Whole(body) => {
                let len = body.as_ref().map_or(0, Bytes::len);
                SizeHint::with_exact(u64::try_from(len).unwrap_or(u64::MAX))
            }
            Body::Events(_) => SizeHint::default(),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Whole(None))
    }
}
