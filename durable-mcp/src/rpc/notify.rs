//! What a tool handler tells the client while it works: log messages and progress, sent as
//! notifications on the call's event stream before its result.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;
use std::task::Waker;

use serde::{Deserialize, Serialize};

use super::listeners::{Listeners, ServerChange};
use serde_json::{Value, json};

/// The severity of a log message, lowest first (syslog's levels, as MCP names them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Act at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// Sends notifications to the client of one call ([`log`](Self::log) and
/// [`progress`](Self::progress)), and tells every client listening on the server that a list
/// or a resource changed ([`tools_list_changed`](Self::tools_list_changed) and its siblings).
/// What the client did not ask for (a progress token, a log level, a `subscriptions/listen`
/// stream for that change) is dropped, and so is everything when the call cannot stream.
#[derive(Clone, Default)]
pub struct Notifier {
    outbox: Option<Rc<Outbox>>,
    /// The host's listen streams, for list changes.
    listeners: Option<Listeners>,
}

struct Outbox {
    progress_token: Option<Value>,
    /// The lowest level the client wants; `None`: no log messages.
    log_level: Option<LogLevel>,
    queue: RefCell<VecDeque<Value>>,
    waker: RefCell<Option<Waker>>,
}

impl Notifier {
    /// A notifier for a call whose client sent `progress_token` and wants log messages from
    /// `log_level` up.
    pub(crate) fn listening(progress_token: Option<Value>, log_level: Option<LogLevel>) -> Self {
        if progress_token.is_none() && log_level.is_none() {
            return Notifier::default();
        }
        let outbox = Rc::new(Outbox {
            progress_token,
            log_level,
            queue: RefCell::default(),
            waker: RefCell::default(),
        });
        Notifier {
            outbox: Some(outbox),
            listeners: None,
        }
    }

    /// The same notifier, whose list changes reach the streams of `listeners`.
    pub(crate) fn announcing_to(mut self, listeners: &Listeners) -> Self {
        self.listeners = Some(listeners.clone());
        self
    }

    /// Whether log messages and progress reach the client of this call.
    pub fn is_listening(&self) -> bool {
        self.outbox.is_some()
    }

    /// Tells every `subscriptions/listen` stream that asked for it that the server's list of
    /// tools changed (`notifications/tools/list_changed`). On the native host this reaches the
    /// streams of the whole process; on a Worker, those of the isolate that runs the call.
    pub fn tools_list_changed(&self) {
        self.announce(ServerChange::ToolsListChanged);
    }

    /// Tells the listening clients that the list of prompts changed (see
    /// [`tools_list_changed`](Self::tools_list_changed)).
    pub fn prompts_list_changed(&self) {
        self.announce(ServerChange::PromptsListChanged);
    }

    /// Tells the listening clients that the list of resources changed (see
    /// [`tools_list_changed`](Self::tools_list_changed)).
    pub fn resources_list_changed(&self) {
        self.announce(ServerChange::ResourcesListChanged);
    }

    /// Tells the clients listening to the resource `uri` that its content changed
    /// (`notifications/resources/updated`; see
    /// [`tools_list_changed`](Self::tools_list_changed)).
    pub fn resource_updated(&self, uri: &str) {
        self.announce(ServerChange::ResourceUpdated(uri.to_owned()));
    }

    fn announce(&self, change: ServerChange) {
        if let Some(listeners) = &self.listeners {
            listeners.announce(change);
        }
    }

    /// Sends a log message (`notifications/message`) if the client wants `level`.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: impl Into<Value>) {
        let Some(outbox) = &self.outbox else { return };
        if outbox.log_level.is_none_or(|wanted| level < wanted) {
            return;
        }
        let mut params = json!({ "level": level, "data": data.into() });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        outbox
            .push(json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": params }));
    }

    /// Reports progress (`notifications/progress`) if the client sent a progress token.
    /// `progress` must grow from one report to the next; `total` is the value it will reach,
    /// if known.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(outbox) = &self.outbox else { return };
        let Some(token) = &outbox.progress_token else {
            return;
        };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        outbox.push(
            json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params }),
        );
    }

    /// The oldest notification not sent yet; else `waker` is woken when one comes.
    pub(crate) fn take(&self, waker: &Waker) -> Option<Value> {
        let outbox = self.outbox.as_ref()?;
        let next = outbox.queue.borrow_mut().pop_front();
        if next.is_none() {
            *outbox.waker.borrow_mut() = Some(waker.clone());
        }
        next
    }
}

impl Outbox {
    fn push(&self, message: Value) {
        self.queue.borrow_mut().push_back(message);
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("listening", &self.is_listening())
            .finish()
    }
}

/// Two calls are equal whatever their notifiers (a notifier is a channel, not a value).
impl PartialEq for Notifier {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_only_what_the_client_asked_for() {
        let waker = futures_util::task::noop_waker();
        let notifier = Notifier::listening(Some(json!("p1")), Some(LogLevel::Info));
        notifier.log(LogLevel::Debug, None, "too fine");
        notifier.log(LogLevel::Warning, Some("db"), "slow");
        notifier.progress(1.0, Some(2.0), None);
        let first = notifier.take(&waker).unwrap();
        assert_eq!(
            first["params"],
            json!({ "level": "warning", "logger": "db", "data": "slow" })
        );
        let second = notifier.take(&waker).unwrap();
        assert_eq!(second["params"]["progressToken"], "p1");
        assert!(notifier.take(&waker).is_none());

        let deaf = Notifier::listening(None, None);
        deaf.log(LogLevel::Emergency, None, "lost");
        assert!(!deaf.is_listening() && deaf.take(&waker).is_none());
    }
}
