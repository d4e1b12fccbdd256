//! Awaiting a future as a function of its own.
//!
//! A Worker's V8 compiles each Wasm function the first time it is called, and compiles all of
//! it, every branch. An `async fn` that awaits another inlines the callee's state machine into
//! its own, so a `match` over methods whose arms await a handler each becomes one large
//! function, compiled whole by the first request whatever arm it takes: the first request of
//! a fresh isolate pays for compiling code it never runs (`cargo xtask bench cold` measures
//! it). An arm awaited through [`apart`] stays a function of its own, compiled when a request
//! first takes it. It costs one allocation per await, and keeps the caller's future the size
//! of a pointer rather than of its largest arm.

use std::future::Future;

use futures_util::future::LocalBoxFuture;

/// `future`, boxed: polled through a pointer, so its code is not inlined into its caller's.
pub(crate) fn apart<'a, T>(future: impl Future<Output = T> + 'a) -> LocalBoxFuture<'a, T> {
    Box::pin(future)
}
