//! Requests driven from JavaScript: the Worker's fetch handler as a plain function that returns
//! the platform a promise, with the request's future polled by a small JavaScript loop instead
//! of by wasm-bindgen-futures.
//!
//! A future polled by wasm-bindgen-futures pays, at every await of a JavaScript promise, two
//! closures handed to `then`, a microtask to queue the task and a call back into wasm: a
//! measurable share of a poll's CPU and latency under workerd (`cargo xtask bench worker`).
//! Here the few promises a request waits for on the Worker's side (its body, the
//! RPC call to its object) go through [`settled`]: while [`start`] polls the request, such a
//! promise is handed back to the loop below, which awaits it natively and polls the request
//! again with its outcome. Everything else a request awaits (a timer, a channel) wakes it
//! through an ordinary waker, which resolves a promise the loop awaits.
//!
//! A request awaits at most one handed promise at a time; a second one awaited meanwhile (a
//! page of `tasks/list` asks its objects together) is awaited the usual way. A handed promise
//! delays the request's notice of other wake-ups until it settles, so only waits that are
//! not raced against a timer use [`settled`].

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use worker::js_sys::Promise;
use worker::wasm_bindgen::{self, JsValue, prelude::wasm_bindgen};
use worker::wasm_bindgen_futures::JsFuture;

use super::protocol::js_error;

#[wasm_bindgen(inline_js = r#"
import * as glue from "../../index.js";

export async function drive(id, awaited) {
  while (awaited !== undefined) {
    let ok = true;
    let value;
    try {
      value = await awaited;
    } catch (error) {
      ok = false;
      value = error;
    }
    awaited = glue.durableMcpResume(id, ok, value);
  }
  return glue.durableMcpAnswer(id);
}

export function wake_up() {
  let wake;
  const promise = new Promise((resolve) => {
    wake = resolve;
  });
  promise.wake = wake;
  return promise;
}
"#)]
extern "C" {
    /// Awaits `awaited` and hands its outcome to [`resume`] until the request `id` has its
    /// answer; resolves to it (or rejects with its error).
    fn drive(id: u32, awaited: JsValue) -> Promise;

    /// A promise that its `wake` method resolves.
    type WakeUp;

    fn wake_up() -> WakeUp;

    /// Resolves the promise.
    #[wasm_bindgen(method)]
    fn wake(this: &WakeUp);
}

/// Runs `request` to its answer, polled by the JavaScript loop: a promise of the answer, or
/// rejected with the error (or the panic) the request ended with.
pub(crate) fn start<F>(request: F) -> Promise
where
    F: Future<Output = Result<JsValue, JsValue>> + 'static,
{
    let id = NEXT_ID.with(|next| {
        let id = next.get();
        next.set(id.wrapping_add(1));
        id
    });
    let future = AssertUnwindSafe(request).catch_unwind().map(settle);
    let request = Request {
        future: Some(Box::pin(future)),
        shared: Rc::new(Shared::default()),
        answer: None,
    };
    REQUESTS.with(|requests| requests.borrow_mut().push((id, request)));
    drive(id, step(id))
}

/// What a future caught unwinding comes to: its own outcome, or the JavaScript error naming
/// its panic.
pub(crate) fn settle<T>(
    outcome: Result<Result<T, JsValue>, Box<dyn Any + Send>>,
) -> Result<T, JsValue> {
    outcome.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a panic");
        Err(js_error(&format!("durable-mcp panicked: {message}")))
    })
}

/// The outcome of `promise`: handed to the JavaScript loop when a driven request awaits it,
/// else awaited through wasm-bindgen-futures.
pub(crate) fn settled(promise: Promise) -> Settled {
    Settled {
        state: Wait::Fresh(promise),
    }
}

/// The future of [`settled`].
pub(crate) struct Settled {
    state: Wait,
}

enum Wait {
    /// Not polled yet.
    Fresh(Promise),
    /// Handed to the loop of the request `shared` belongs to.
    Handed(Rc<Shared>),
    /// Awaited the usual way.
    Future(JsFuture),
    /// Its outcome taken.
    Done,
}

impl Future for Settled {
    type Output = Result<JsValue, JsValue>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut self.state;
        loop {
            match this {
                Wait::Fresh(promise) => {
                    let promise = promise.clone();
                    *this = match CURRENT.with(|current| current.borrow().clone()) {
                        Some(shared) if shared.hand(&promise) => Wait::Handed(shared),
                        _ => Wait::Future(JsFuture::from(promise)),
                    };
                }
                Wait::Handed(shared) => {
                    let Some(outcome) = shared.inbox.borrow_mut().take() else {
                        // A combinator that polls only what was woken (`join_all` of many)
                        // polls this again only if the outcome's arrival wakes it.
                        *shared.handed_waker.borrow_mut() = Some(cx.waker().clone());
                        return Poll::Pending;
                    };
                    shared.busy.set(false);
                    *this = Wait::Done;
                    return Poll::Ready(outcome);
                }
                Wait::Future(future) => return Pin::new(future).poll(cx),
                Wait::Done => panic!("`settled` polled after it completed"),
            }
        }
    }
}

/// One request being driven.
struct Request {
    /// Out of its slot while it is polled.
    future: Option<LocalBoxFuture<'static, Result<JsValue, JsValue>>>,
    shared: Rc<Shared>,
    answer: Option<Result<JsValue, JsValue>>,
}

/// What a request's poll, its [`Settled`] futures and its waker share.
#[derive(Default)]
struct Shared {
    /// The promise handed to the loop by the poll under way.
    outbox: RefCell<Option<Promise>>,
    /// The outcome of the handed promise, for its [`Settled`].
    inbox: RefCell<Option<Result<JsValue, JsValue>>>,
    /// Wakes the handed promise's [`Settled`] when its outcome arrives.
    handed_waker: RefCell<Option<Waker>>,
    /// A handed promise's outcome has not been taken yet.
    busy: Cell<bool>,
    /// What the loop awaits now.
    awaits: Cell<Awaits>,
    /// The request was woken since its poll began.
    woken: Cell<bool>,
    /// The promise the loop awaits while the request waits for a wake-up.
    wake: RefCell<Option<WakeUp>>,
}

/// What the JavaScript loop of a request is awaiting.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Awaits {
    #[default]
    Nothing,
    /// A promise handed by a [`Settled`].
    Handed,
    /// A wake-up.
    Wake,
}

impl Shared {
    /// Takes `promise` to hand to the loop, unless another is handed already.
    fn hand(&self, promise: &Promise) -> bool {
        if self.busy.get() {
            return false;
        }
        self.busy.set(true);
        *self.outbox.borrow_mut() = Some(promise.clone());
        true
    }
}

thread_local! {
    /// The id of the next driven request.
    static NEXT_ID: Cell<u32> = const { Cell::new(0) };
    /// The requests being driven, by id: a few at a time in an isolate.
    static REQUESTS: RefCell<Vec<(u32, Request)>> = const { RefCell::new(Vec::new()) };
    /// The request whose future is being polled.
    static CURRENT: RefCell<Option<Rc<Shared>>> = const { RefCell::new(None) };
}

fn with_request<T>(id: u32, f: impl FnOnce(&mut Request) -> T) -> Option<T> {
    REQUESTS.with(|requests| {
        let mut requests = requests.borrow_mut();
        let (_, request) = requests.iter_mut().find(|(key, _)| *key == id)?;
        Some(f(request))
    })
}

/// Polls the request `id` until it has its answer (`undefined`) or waits: the promise the loop
/// is to await next.
fn step(id: u32) -> JsValue {
    let Some((Some(mut future), shared)) = with_request(id, |request| {
        (request.future.take(), Rc::clone(&request.shared))
    }) else {
        return JsValue::UNDEFINED;
    };
    let waker = Waker::from(Arc::new(RequestWaker(id)));
    loop {
        shared.woken.set(false);
        let previous = CURRENT.with(|current| current.replace(Some(Rc::clone(&shared))));
        let polled = future.as_mut().poll(&mut Context::from_waker(&waker));
        CURRENT.with(|current| *current.borrow_mut() = previous);
        match polled {
            Poll::Ready(answer) => {
                with_request(id, |request| request.answer = Some(answer));
                return JsValue::UNDEFINED;
            }
            Poll::Pending => {
                if let Some(promise) = shared.outbox.borrow_mut().take() {
                    shared.awaits.set(Awaits::Handed);
                    with_request(id, |request| request.future = Some(future));
                    return promise.into();
                }
                if shared.woken.get() {
                    continue;
                }
                shared.awaits.set(Awaits::Wake);
                with_request(id, |request| request.future = Some(future));
                let wake = wake_up();
                let promise = JsValue::from(&wake);
                *shared.wake.borrow_mut() = Some(wake);
                return promise;
            }
        }
    }
}

/// Wakes a driven request by id: its future may be gone by then.
struct RequestWaker(u32);

impl Wake for RequestWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let Some(shared) = with_request(self.0, |request| Rc::clone(&request.shared)) else {
            return;
        };
        shared.woken.set(true);
        if let Some(wake) = shared.wake.borrow_mut().take() {
            // Resolving a promise runs nothing at once: the loop goes on in a microtask.
            wake.wake();
        }
    }
}

/// The loop's call when what it awaited settled: `ok` and `value` are the outcome.
#[wasm_bindgen(js_name = durableMcpResume)]
pub fn resume(id: u32, ok: bool, value: JsValue) -> JsValue {
    let handed = with_request(id, |request| Rc::clone(&request.shared))
        .filter(|shared| shared.awaits.replace(Awaits::Nothing) == Awaits::Handed);
    if let Some(shared) = handed {
        *shared.inbox.borrow_mut() = Some(if ok { Ok(value) } else { Err(value) });
        let waker = shared.handed_waker.borrow_mut().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
    step(id)
}

/// The loop's last call: the request's answer, which ends it.
#[wasm_bindgen(js_name = durableMcpAnswer)]
pub fn answer(id: u32) -> Result<JsValue, JsValue> {
    REQUESTS.with(|requests| {
        let mut requests = requests.borrow_mut();
        let at = requests.iter().position(|(key, _)| *key == id);
        let request = at.map(|at| requests.swap_remove(at).1);
        request
            .and_then(|request| request.answer)
            .unwrap_or_else(|| {
                Err(js_error(
                    "durable-mcp: a driven request ended without answer",
                ))
            })
    })
}
