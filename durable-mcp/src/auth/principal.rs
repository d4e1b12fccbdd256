//! Who a valid token speaks for, and the port through which a validator says so.

use std::fmt;

use crate::runtime::LocalBoxFuture;

/// The caller an access token was issued for, as a validator read it.
///
/// Tasks are bound to the issuer and subject ([`binding`](Self::binding)), not to the token:
/// the same user reaches a multi-day task with a fresh token, and nobody else reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// The authorization server that issued the token (`iss`).
    pub issuer: String,
    /// The user (or service) the token speaks for (`sub`).
    pub subject: String,
    /// The client the token was issued to (`client_id`, or `azp`), if the token says.
    pub client_id: Option<String>,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
}

impl Principal {
    /// The caller `subject` of `issuer`, with `scopes`.
    pub fn new(
        issuer: impl Into<String>,
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Principal {
            issuer: issuer.into(),
            subject: subject.into(),
            client_id: None,
            scopes: scopes.into_iter().map(Into::into).collect(),
        }
    }

    /// The same caller, naming the client the token was issued to.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// What the tasks this caller starts are bound to, and what
    /// [`TaskContext::principal`](crate::TaskContext::principal) shows their bodies:
    /// `<issuer>#<subject>` (an issuer URL has no `#`, so the two parts never run together).
    ///
    /// The client id is not part of it: a client that registers again (dynamic registration
    /// gives it a new id) still reaches the tasks its user started.
    pub fn binding(&self) -> String {
        format!("{}#{}", self.issuer, self.subject)
    }

    /// Whether the token grants every scope in `needed`.
    pub fn grants(&self, needed: &[String]) -> bool {
        needed.iter().all(|scope| self.scopes.contains(scope))
    }
}

/// Why a token was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenRefusal {
    /// The token is malformed, expired, not yet valid, for another audience, from an untrusted
    /// issuer, or its signature does not verify: HTTP 401 `invalid_token`. The reason is told
    /// to the client (`error_description`), so it never quotes the token.
    Invalid(String),
    /// The token could not be checked now (the authorization server's keys or introspection
    /// endpoint did not answer): HTTP 503, never a pass. The reason is logged, not told.
    Unavailable(String),
}

impl fmt::Display for TokenRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenRefusal::Invalid(reason) => write!(f, "invalid token: {reason}"),
            TokenRefusal::Unavailable(reason) => write!(f, "token not checked: {reason}"),
        }
    }
}

impl std::error::Error for TokenRefusal {}

/// Checks an access token and says whom it speaks for: the built-in JWT and introspection
/// validators, or one of the application's own (see [`OAuth::validator`](super::OAuth::validator)).
///
/// A validator is called for every request that carries a bearer token, after the server has
/// checked the request's shape and before it reads or changes any task. It sees the token
/// only; the server checks the scopes each method and tool needs from the
/// [`Principal::scopes`] it returns.
pub trait TokenValidator {
    /// The caller `token` was issued to, or why it is refused.
    fn validate<'a>(
        &'a self,
        token: &'a str,
    ) -> LocalBoxFuture<'a, Result<Principal, TokenRefusal>>;
}

impl<F, Fut> TokenValidator for F
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Principal, TokenRefusal>> + 'static,
{
    fn validate<'a>(
        &'a self,
        token: &'a str,
    ) -> LocalBoxFuture<'a, Result<Principal, TokenRefusal>> {
        Box::pin(self(token.to_owned()))
    }
}
