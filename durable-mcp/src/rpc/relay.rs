//! Answers to the requests a plain tool's call sends a 2025-era client (`sampling/createMessage`,
//! `elicitation/create`) on its event stream. The client answers each with a POST of its own,
//! which reaches the call waiting here by the request's id. The waiting calls are this
//! process's, whichever of its threads they run on (the native host's answer may arrive at
//! another worker than the call's), or this isolate's on Workers: an answer that lands in
//! another process or isolate is not seen, and the call gives up after its deadline. Task tools do not depend on this: their answers go to the
//! task itself.

use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use serde_json::Value;

/// The prefix of the ids of the requests a plain tool's call sends.
pub(crate) const CALL_REQUEST_PREFIX: &str = "call/";

#[derive(Default)]
struct Slot {
    answer: Option<Value>,
    waker: Option<Waker>,
}

/// The requests awaiting answers, by id, over every thread of the process.
static WAITING: LazyLock<Mutex<HashMap<String, Slot>>> = LazyLock::new(Mutex::default);

fn waiting() -> MutexGuard<'static, HashMap<String, Slot>> {
    // The map stays whole across a panic: every change is one insert, remove or assignment.
    WAITING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The requests of one call awaiting answers; dropping it (the client went away, the call
/// ended) forgets them.
pub(crate) struct Awaited {
    ids: Vec<String>,
}

impl Awaited {
    /// Awaits answers to the requests `ids`.
    pub(crate) fn new(ids: Vec<String>) -> Self {
        let mut waiting = waiting();
        for id in &ids {
            waiting.insert(id.clone(), Slot::default());
        }
        Awaited { ids }
    }

    /// Every answer, in the order of the ids, once all have come.
    pub(crate) async fn answers(&self) -> Vec<Value> {
        poll_fn(|cx| {
            let mut waiting = waiting();
            let mut answers = Vec::with_capacity(self.ids.len());
            for id in &self.ids {
                let slot = waiting.entry(id.clone()).or_default();
                match &slot.answer {
                    Some(answer) => answers.push(answer.clone()),
                    None => slot.waker = Some(cx.waker().clone()),
                }
            }
            if answers.len() == self.ids.len() {
                Poll::Ready(answers)
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

impl Drop for Awaited {
    fn drop(&mut self) {
        let mut waiting = waiting();
        for id in &self.ids {
            waiting.remove(id);
        }
    }
}

/// Hands the client's `answer` to the call that sent request `id`; `false` if no call here
/// awaits it.
pub(crate) fn deliver(id: &str, answer: Value) -> bool {
    let mut waiting = waiting();
    let Some(slot) = waiting.get_mut(id) else {
        return false;
    };
    slot.answer = Some(answer);
    let waker = slot.waker.take();
    drop(waiting);
    // Woken outside the lock: the call may run on this thread, and poll at once.
    if let Some(waker) = waker {
        waker.wake();
    }
    true
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    #[test]
    fn answers_reach_the_call_that_awaits_them_and_are_forgotten_with_it() {
        let awaited = Awaited::new(vec!["call/n/a".into(), "call/n/b".into()]);
        assert!(awaited.answers().now_or_never().is_none());
        assert!(deliver("call/n/b", Value::from(2)));
        assert!(deliver("call/n/a", Value::from(1)));
        assert_eq!(
            awaited.answers().now_or_never(),
            Some(vec![1.into(), 2.into()])
        );
        drop(awaited);
        assert!(!deliver("call/n/a", Value::from(1)));
    }
}
