//! Pushing a task's changes from its object to the Worker (`TaskRoute::watch`), both ends.
//!
//! The Worker opens a WebSocket to the task's TaskRunner: a `fetch` to the object at
//! [`WATCH_PATH`] with `Upgrade: websocket`, naming the task and the caller. The object checks
//! that the caller may see the task (a refusal is a plain HTTP answer), accepts the socket with
//! the hibernation API, sends the task's snapshot at once and, through a sink registered with
//! its engine, the snapshot after each commit that may change it: one JSON text message each.
//!
//! A hibernatable socket keeps neither the object nor anything in it awake: the platform may
//! evict the object from memory while the socket stays open. The next instance (an alarm or a
//! call wakes it) registers a sink for each socket it finds ([`rewatch`]), so later commits
//! reach them. A purge drops the sinks, which closes their sockets; so does a task the caller
//! may no longer see. The Worker's stream ends when its socket closes or errs: the listen layer
//! then watches again, and gets the current state.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_channel::mpsc::{UnboundedReceiver, unbounded};
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use worker::wasm_bindgen::closure::Closure;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::web_sys;
use worker::{Headers, Request, RequestInit, Response, State, Url, WebSocket, WebSocketPair};

use super::client::{ObjectClient, internal};
use super::protocol::ObjectReply;
use crate::core::TaskSnapshot;
use crate::runtime::engine::Access;
use crate::runtime::watch::Sink;
use crate::runtime::{Engine, RouteError, TaskChanges};

/// The path of a watch on a TaskRunner (a `fetch` from the Worker, nobody else's).
const WATCH_PATH: &str = "/watch";

/// The close code of a socket the object ends: normal closure (the task is gone, or the
/// watcher's end went away).
const CLOSE_NORMAL: u16 = 1000;

/// Who watches which task: read from a watch's URL, and kept on its socket (its attachment)
/// for the instances that wake after hibernation.
#[derive(Debug, Serialize, Deserialize)]
struct Watcher {
    task_id: String,
    /// The principal the Worker resolved for the request; a server-side value, never a token.
    caller: Option<String>,
    /// The Worker's inspector watches for its operator (its token checked), who sees every
    /// task.
    #[serde(default)]
    operator: bool,
}

impl Watcher {
    /// Who the engine checks the task against.
    fn access(&self) -> Access<'_> {
        match self.operator {
            true => Access::Engine,
            false => Access::Caller(self.caller.as_deref()),
        }
    }
}

// The Worker's end.

/// Watches `task_id` as `caller` may see it (or, for the inspector, as the `operator`, who
/// sees every task), through a WebSocket to its object.
pub(super) async fn open(
    runners: &ObjectClient,
    task_id: &str,
    caller: Option<&str>,
    operator: bool,
) -> Result<TaskChanges, RouteError> {
    let mut pairs = vec![("task", task_id)];
    pairs.extend(caller.map(|caller| ("caller", caller)));
    if operator {
        pairs.push(("operator", "1"));
    }
    let url = Url::parse_with_params(&format!("https://task{WATCH_PATH}"), &pairs)
        .map_err(|error| internal("making a watch's URL", &error))?;
    let mut response = runners
        .fetch(task_id, || {
            let headers = Headers::new();
            headers.set("Upgrade", "websocket")?;
            Request::new_with_init(url.as_str(), RequestInit::new().with_headers(headers))
        })
        .await?;
    if response.status_code() != 101 {
        let status = response.status_code();
        let text = response.text().await.unwrap_or_default();
        return Err(match serde_json::from_str(&text) {
            Ok(ObjectReply::Refused(refusal)) => RouteError::from(refusal),
            _ => RouteError::Failed(format!(
                "the task's Durable Object answered a watch of {task_id} with HTTP {status} \
                 ({text}); deploy the Worker and its objects together, from a durable-mcp \
                 that pushes task changes"
            )),
        });
    }
    let socket = response.websocket().ok_or_else(|| {
        RouteError::Failed(format!(
            "the task's Durable Object accepted a watch of {task_id} without a WebSocket"
        ))
    })?;
    Changes::follow(socket).map(|changes| Box::pin(changes) as TaskChanges)
}

/// The snapshots arriving on a watch's socket. Dropping it closes the socket, so that the
/// object drops its sink.
struct Changes {
    socket: WebSocket,
    /// A text message, or `None`: the socket closed, erred, or carried something else.
    events: UnboundedReceiver<Option<String>>,
    listeners: Vec<Listener>,
    ended: bool,
}

/// An event listener on a socket, and the kind of event it hears.
type Listener = (&'static str, Closure<dyn FnMut(JsValue)>);

impl Changes {
    /// Listens to `socket`, then accepts it (the object may have sent already: its messages
    /// wait for the accept).
    fn follow(socket: WebSocket) -> Result<Self, RouteError> {
        let (sender, events) = unbounded();
        let mut changes = Changes {
            socket,
            events,
            listeners: Vec::with_capacity(3),
            ended: false,
        };
        for kind in ["message", "close", "error"] {
            // A Worker built with `--panic-unwind` asks for unwind safety; a send cannot
            // leave the channel half changed.
            let sender = AssertUnwindSafe(sender.clone());
            let listener = Closure::new(move |event: JsValue| {
                let sender = &sender;
                let text = event
                    .dyn_ref::<web_sys::MessageEvent>()
                    .and_then(|message| message.data().as_string());
                // The stream may be gone already; then nobody needs the event.
                let _ = sender.0.unbounded_send(text);
            });
            changes
                .socket
                .as_ref()
                .add_event_listener_with_callback(kind, listener.as_ref().unchecked_ref())
                .map_err(|error| internal("listening to a watch's WebSocket", &js_text(&error)))?;
            changes.listeners.push((kind, listener));
        }
        changes
            .socket
            .accept()
            .map_err(|error| internal("accepting a watch's WebSocket", &error))?;
        Ok(changes)
    }
}

impl Stream for Changes {
    type Item = TaskSnapshot;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TaskSnapshot>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let Some(Some(text)) = std::task::ready!(self.events.poll_next_unpin(cx)) else {
            self.ended = true;
            return Poll::Ready(None);
        };
        match serde_json::from_str(&text) {
            Ok(snapshot) => Poll::Ready(Some(snapshot)),
            Err(error) => {
                tracing::error!(
                    target: crate::core::trace::TARGET,
                    "a task's Durable Object sent a watch something that is no task snapshot \
                     ({error}); deploy the Worker and its objects together"
                );
                self.ended = true;
                Poll::Ready(None)
            }
        }
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        let socket: &web_sys::WebSocket = self.socket.as_ref();
        // Removed before the closures are freed: a closure called after would throw.
        for (kind, listener) in &self.listeners {
            let _ =
                socket.remove_event_listener_with_callback(kind, listener.as_ref().unchecked_ref());
        }
        close(socket, "the watch ended");
    }
}

// The object's end.

/// Whether `request` is a watch (the Worker's `fetch` to a TaskRunner).
pub(super) fn asks_to_watch(request: &Request) -> bool {
    request.path() == WATCH_PATH
}

/// Answers a watch of a task of `engine`: the upgrade to a socket on which the task's
/// snapshot goes at once and after each change, or the refusal as a plain HTTP answer.
pub(super) fn accept(
    state: &State,
    engine: &Engine,
    request: &Request,
) -> worker::Result<Response> {
    let Some(watcher) = watcher_of(request) else {
        return refused(RouteError::Refused(
            "a watch names its task (only the Worker sends watches)".to_owned(),
        ));
    };
    let task_id = &watcher.task_id;
    // Checked before any upgrade, so that a refusal is an ordinary answer.
    if let Err(error) = engine.snapshot_as(task_id, watcher.access()) {
        return refused(error.into());
    }
    let pair = WebSocketPair::new()?;
    let server: &web_sys::WebSocket = pair.server.as_ref();
    if let Err(error) = state.as_raw().accept_websocket(server) {
        return refused(internal("accepting a watch's WebSocket", &js_text(&error)));
    }
    if let Err(error) = pair.server.serialize_attachment(&watcher) {
        close(server, "the watch could not be recorded");
        return refused(internal("recording a watch on its WebSocket", &error));
    }
    // Registered and sent in one synchronous step: no commit comes between.
    let first = match engine.watch(
        task_id,
        watcher.access(),
        Box::new(SocketSink(server.clone())),
    ) {
        Ok(first) => first,
        // The sink was dropped, which closed the socket.
        Err(error) => return refused(error.into()),
    };
    if let Err(error) = send(server, &first) {
        close(server, "the task's snapshot could not be sent");
        return refused(RouteError::Failed(format!(
            "sending task {task_id}'s snapshot to a watch: {error}"
        )));
    }
    Response::from_websocket(pair.client)
}

/// Registers a sink with `engine` for each watch's socket the object holds: after hibernation
/// the sockets survive, the previous instance's sinks do not. Called as the object is built,
/// before any event reaches it, so that no commit goes unsent.
pub(super) fn rewatch(state: &State, engine: &Engine) {
    let sockets = match state.as_raw().get_websockets() {
        Ok(sockets) => sockets,
        Err(error) => {
            tracing::error!(
                target: crate::core::trace::TARGET,
                "reading the task's watches (getWebSockets): {}",
                js_text(&error)
            );
            return;
        }
    };
    for socket in sockets {
        if is_closing(&socket) {
            continue;
        }
        let watcher = WebSocket::from(socket.clone()).deserialize_attachment::<Watcher>();
        let Ok(Some(watcher)) = watcher else {
            close(&socket, "not a watch");
            continue;
        };
        // A task gone (or not visible any more) drops the sink, which closes the socket.
        let sink = Box::new(SocketSink(socket));
        let _ = engine.watch(&watcher.task_id, watcher.access(), sink);
    }
}

/// What the object does when the Worker's end of a watch closed or erred: closes its own
/// end, which completes the closing handshake. Its sink goes at the next commit.
pub(super) fn ended(socket: &web_sys::WebSocket) {
    close(socket, "the watcher left");
}

/// The watcher a watch's URL names.
fn watcher_of(request: &Request) -> Option<Watcher> {
    let url = request.url().ok()?;
    let mut task_id = None;
    let mut caller = None;
    let mut operator = false;
    for (name, value) in url.query_pairs() {
        match &*name {
            "task" => task_id = Some(value.into_owned()),
            "caller" => caller = Some(value.into_owned()),
            "operator" => operator = value == "1",
            _ => {}
        }
    }
    Some(Watcher {
        task_id: task_id?,
        caller,
        operator,
    })
}

/// A refusal as the Worker reads it: the error's JSON, under a status that says its kind.
fn refused(error: RouteError) -> worker::Result<Response> {
    let status = match &error {
        RouteError::NotFound(_) => 404,
        RouteError::Refused(_) => 400,
        RouteError::Busy { .. } => 503,
        RouteError::Failed(_) => 500,
    };
    Ok(Response::from_json(&ObjectReply::from(error))?.with_status(status))
}

/// A watch's socket, as its engine tells it of the task's changes.
struct SocketSink(web_sys::WebSocket);

impl Sink for SocketSink {
    fn send(&self, snapshot: &TaskSnapshot) -> bool {
        send(&self.0, snapshot).is_ok()
    }

    fn is_closed(&self) -> bool {
        is_closing(&self.0)
    }
}

impl Drop for SocketSink {
    fn drop(&mut self) {
        // The engine drops a sink when the task is gone, the caller may not see it, or a
        // send failed: the Worker's stream ends with the socket.
        close(&self.0, "the task is gone");
    }
}

/// Sends `snapshot` on `socket` as JSON text.
fn send(socket: &web_sys::WebSocket, snapshot: &TaskSnapshot) -> Result<(), String> {
    let text = serde_json::to_string(snapshot).map_err(|error| error.to_string())?;
    socket.send_with_str(&text).map_err(|error| js_text(&error))
}

/// Whether `socket` is closing or closed.
fn is_closing(socket: &web_sys::WebSocket) -> bool {
    socket.ready_state() >= web_sys::WebSocket::CLOSING
}

/// Closes `socket` unless it is closing already.
fn close(socket: &web_sys::WebSocket, reason: &str) {
    if !is_closing(socket) {
        // A socket that cannot close is closing already, or was never opened.
        let _ = socket.close_with_code_and_reason(CLOSE_NORMAL, reason);
    }
}

/// A JavaScript error's message.
fn js_text(error: &JsValue) -> String {
    match error.dyn_ref::<worker::js_sys::Error>() {
        Some(error) => String::from(error.message()),
        None => format!("{error:?}"),
    }
}

/// Gives a TaskRunner class (`struct $name(TaskRunner)`) the handlers of the hibernation API
/// for its watches' sockets: a message is ignored (the Worker sends none), a close or an error
/// closes the object's end. [`task_runner!`](super::task_runner) invokes it. Each answers with
/// a settled promise: the handlers run no I/O.
#[doc(hidden)]
#[macro_export]
macro_rules! __watch_socket_handlers {
    ($name:ident) => {
        const _: () = {
            use ::worker::js_sys::Promise;
            use ::worker::wasm_bindgen::JsValue;
            use ::worker::wasm_bindgen::prelude::wasm_bindgen;
            use ::worker::web_sys::WebSocket;

            #[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen)]
            impl $name {
                /// A message on a watch's socket: ignored.
                #[wasm_bindgen(js_name = webSocketMessage)]
                pub fn durable_mcp_socket_message(
                    &self,
                    _socket: WebSocket,
                    _message: JsValue,
                ) -> Promise {
                    Promise::resolve(&JsValue::UNDEFINED)
                }

                /// The Worker closed its end of a watch.
                #[wasm_bindgen(js_name = webSocketClose)]
                pub fn durable_mcp_socket_close(
                    &self,
                    socket: WebSocket,
                    _code: JsValue,
                    _reason: JsValue,
                    _was_clean: JsValue,
                ) -> Promise {
                    self.0.watch_ended(&socket);
                    Promise::resolve(&JsValue::UNDEFINED)
                }

                /// A watch's socket failed.
                #[wasm_bindgen(js_name = webSocketError)]
                pub fn durable_mcp_socket_error(
                    &self,
                    socket: WebSocket,
                    _error: JsValue,
                ) -> Promise {
                    self.0.watch_ended(&socket);
                    Promise::resolve(&JsValue::UNDEFINED)
                }
            }
        };
    };
}
