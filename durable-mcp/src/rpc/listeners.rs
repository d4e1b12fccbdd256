//! The host's open `subscriptions/listen` streams, as one hub: what changes on the server
//! side (a list, a resource) reaches every stream from here, and the hub holds the host to its
//! bound on open streams. One hub per process natively, shared by the worker threads; one per
//! isolate on a Worker.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};

/// Something that changed on the server's side, for the streams that asked to hear of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ServerChange {
    ToolsListChanged,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated(String),
    /// The host is stopping: every stream ends, gracefully.
    #[cfg_attr(not(native_host), allow(dead_code))]
    Closing,
}

/// How many streams a host holds open, and how many tasks one stream may follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ListenLimits {
    /// Open `subscriptions/listen` streams, over every client.
    pub(crate) max_streams: usize,
    /// `taskIds` in one stream.
    pub(crate) max_task_ids: usize,
}

impl ListenLimits {
    /// What the official TypeScript SDK holds a server to (1,024 streams), and a hundred
    /// tasks a stream.
    pub(crate) const DEFAULT: ListenLimits = ListenLimits {
        max_streams: 1024,
        max_task_ids: 100,
    };
}

/// The hub; cloned, it is the same hub.
#[derive(Clone)]
pub(crate) struct Listeners(Arc<Hub>);

struct Hub {
    limits: ListenLimits,
    streams: Mutex<Vec<UnboundedSender<ServerChange>>>,
    open: AtomicUsize,
    closing: AtomicBool,
}

impl Default for Listeners {
    fn default() -> Self {
        Listeners::new(ListenLimits::DEFAULT)
    }
}

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listeners")
            .field("limits", &self.0.limits)
            .field("open", &self.open())
            .finish()
    }
}

impl Listeners {
    /// A hub holding its streams to `limits`.
    pub(crate) fn new(limits: ListenLimits) -> Self {
        Listeners(Arc::new(Hub {
            limits,
            streams: Mutex::default(),
            open: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
        }))
    }

    pub(crate) fn limits(&self) -> ListenLimits {
        self.0.limits
    }

    /// How many streams are open.
    pub(crate) fn open(&self) -> usize {
        self.0.open.load(Ordering::Relaxed)
    }

    /// A place for one more stream, or `None` at the bound or once the host stops.
    pub(crate) fn join(&self) -> Option<Membership> {
        let hub = &self.0;
        if hub.closing.load(Ordering::Acquire) {
            return None;
        }
        let admitted = hub
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < hub.limits.max_streams).then_some(open + 1)
            })
            .is_ok();
        if !admitted {
            return None;
        }
        let (sender, changes) = unbounded();
        lock(&hub.streams).push(sender);
        Some(Membership {
            hub: Arc::clone(hub),
            changes,
        })
    }

    /// Tells every open stream of `change` (each keeps what it asked for), and forgets the
    /// streams that ended.
    pub(crate) fn announce(&self, change: ServerChange) {
        lock(&self.0.streams).retain(|stream| stream.unbounded_send(change.clone()).is_ok());
    }

    /// Ends every open stream gracefully and refuses new ones: the host is stopping. (A
    /// Worker's isolate is evicted without notice: its streams are dropped.)
    #[cfg_attr(not(native_host), allow(dead_code))]
    pub(crate) fn close(&self) {
        self.0.closing.store(true, Ordering::Release);
        self.announce(ServerChange::Closing);
    }
}

/// One open stream's place in the hub: what the server announces, until it is dropped.
pub(crate) struct Membership {
    hub: Arc<Hub>,
    pub(crate) changes: UnboundedReceiver<ServerChange>,
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.hub.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The lock, even if a thread panicked holding it: the list of senders stays usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use futures_util::StreamExt;

    #[test]
    fn the_hub_holds_its_bound_and_frees_a_place_when_a_stream_ends() {
        let hub = Listeners::new(ListenLimits {
            max_streams: 2,
            max_task_ids: 1,
        });
        let first = hub.join().expect("under the bound");
        let _second = hub.join().expect("at the bound");
        assert!(hub.join().is_none(), "over the bound");
        drop(first);
        assert_eq!(hub.open(), 1);
        assert!(hub.join().is_some());
    }

    #[test]
    fn every_stream_hears_each_change_and_closing_ends_them_all() {
        let hub = Listeners::default();
        let mut first = hub.join().unwrap();
        let mut second = hub.join().unwrap();
        hub.announce(ServerChange::ToolsListChanged);
        hub.close();
        for member in [&mut first, &mut second] {
            let heard: Vec<_> =
                std::iter::from_fn(|| member.changes.next().now_or_never()?).collect();
            assert_eq!(
                heard,
                [ServerChange::ToolsListChanged, ServerChange::Closing]
            );
        }
        assert!(hub.join().is_none(), "a stopping host opens no stream");
    }
}
