//! The MCP endpoint as a function, for host authors and for tests.
//!
//! A [`Router`] answers one [`HttpRequest`] with one [`HttpResponse`]: every method of both
//! protocol eras, the header and envelope checks, discovery, tools and tasks. The native and
//! Cloudflare hosts put it behind their HTTP servers; a test can call it in process, over the
//! [`Engine`] of `testing::Harness` (see `docs/testing.md`); a host of one's own puts it over an
//! [`Engine`] built from a [`Host`]: a store (see [`crate::store`]), a [`Clock`], a [`Timer`]
//! and a [`Scheduler`]. The engine's own errors ([`EngineError`]) and limits ([`Limits`]) are
//! here too, and where both hosts serve the task inspector ([`INSPECTOR_PATH`]).

pub use crate::core::{Divergence, EngineError, Limits, TaskSnapshot};
#[cfg(all(any_host, feature = "inspector"))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(any(feature = "native", feature = "cloudflare"), feature = "inspector")))
)]
pub use crate::inspector::INSPECTOR_PATH;
pub use crate::rpc::headers::same_secret;
pub use crate::rpc::{
    CorsPolicy, Headers, HttpRequest, HttpResponse, METHOD_HEADER, NAME_HEADER, OriginPolicy,
    PROTOCOL_VERSION_HEADER, Router,
};
pub use crate::runtime::{
    Clock, CreateTask, Engine, Host, RouteError, Scheduler, TaskChanges, TaskRoute, Timer,
};
