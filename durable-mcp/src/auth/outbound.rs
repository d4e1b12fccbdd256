//! What the validators need of the host they run on: HTTP requests to the authorization server
//! and the time. Each host supplies its own (the native host's blocking client on a blocking
//! thread, the Worker's `fetch`), so the validation code is the same on both.

use crate::core::Timestamp;
use crate::runtime::LocalBoxFuture;

/// An answer from the authorization server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fetched {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

/// The longest answer read from an authorization server: metadata, keys and introspection
/// answers are a few kilobytes.
#[cfg_attr(
    not(any_host),
    allow(dead_code) // used by the hosts only
)]
pub(crate) const MAX_FETCHED: usize = 256 * 1024;

/// How long one request to the authorization server may take before the token is answered
/// with 503.
#[cfg_attr(
    not(any_host),
    allow(dead_code) // used by the hosts only
)]
pub(crate) const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// HTTP to the authorization server, and the host's clock.
pub(crate) trait Outbound {
    /// `GET url` with `Accept: application/json`.
    fn get<'a>(&'a self, url: &'a str) -> LocalBoxFuture<'a, Result<Fetched, String>>;

    /// `POST url` with a form body and, when given, an `Authorization` header.
    fn post_form<'a>(
        &'a self,
        url: &'a str,
        form: String,
        authorization: Option<String>,
    ) -> LocalBoxFuture<'a, Result<Fetched, String>>;

    /// The wall clock.
    fn now(&self) -> Timestamp;
}

impl Fetched {
    /// The body as JSON of `T`, when the status is 200.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self, what: &str) -> Result<T, String> {
        if self.status != 200 {
            return Err(format!("{what} answered HTTP {}", self.status));
        }
        serde_json::from_slice(&self.body).map_err(|error| format!("{what} is not valid: {error}"))
    }
}
