//! MCP authorization: the endpoint as an OAuth 2.1 resource server.
//!
//! With [`McpServer::oauth`](crate::McpServer::oauth) (or the settings
//! [`ISSUER_VAR`] and [`RESOURCE_VAR`] on either host) every request must carry an access
//! token (`Authorization: Bearer ...`) issued for this endpoint by a trusted authorization
//! server:
//!
//! - The endpoint publishes its Protected Resource Metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource` and at the same path followed by the endpoint's
//!   path, which is how clients find the authorization server.
//! - A request without a token is answered 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="..."` and the scopes it needs; an invalid or
//!   expired token 401 with `error="invalid_token"`; a token without a scope the method or tool
//!   needs 403 with `error="insufficient_scope"`. A token in the query string is refused.
//! - JWT access tokens (RFC 9068) are checked against the issuer's published keys (signature,
//!   issuer, audience = the endpoint's URL, expiry); opaque tokens through the issuer's
//!   introspection endpoint (RFC 7662); or the application checks tokens itself
//!   ([`OAuth::validator`]).
//! - Each task is bound to the issuer and subject of the token that started it
//!   ([`Principal::binding`]): the same user reaches it with any later token, nobody else does.
//!
//! docs/authorization.md walks through connecting real clients.

mod challenge;
mod introspection;
mod issuer;
mod jwt;
mod metadata;
pub(crate) mod outbound;
mod principal;
mod resource;
mod signature;
mod verdicts;

use std::fmt;
use std::rc::Rc;
use std::time::Duration;

pub(crate) use challenge::{Refusal, bearer_token};
pub(crate) use metadata::metadata_response;
pub use principal::{Principal, TokenRefusal, TokenValidator};

use introspection::{Credentials, Introspector};
use issuer::Issuer;
use jwt::JwtValidator;
use outbound::Outbound;
use resource::CanonicalUrl;
use verdicts::Verdicts;

use crate::settings::{ISSUER_VAR, RESOURCE_VAR};

/// How far a token's `exp` and `nbf` may be off the server's clock: 30 seconds unless
/// [`OAuth::leeway`] says otherwise.
pub(crate) const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// A configuration refused by [`OAuth::new`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The resource is not an absolute `http(s)` URL without a query or fragment.
    #[error(
        "the OAuth resource {0:?} is not the endpoint's absolute URL (like https://mcp.example.com/mcp, \
         without a query or fragment); set {RESOURCE_VAR} to it"
    )]
    Resource(String),
    /// An issuer is not an `https` URL (plain `http` is accepted on loopback only).
    #[error(
        "the OAuth issuer {0:?} is not an https URL (http is accepted only for 127.0.0.1 and \
         localhost); set {ISSUER_VAR} to the issuer identifier your authorization server publishes"
    )]
    Issuer(String),
    /// No issuer was named.
    #[error("OAuth needs at least one trusted issuer; set {ISSUER_VAR}")]
    NoIssuer,
}

/// How the endpoint checks access tokens: its canonical URL, the authorization servers it
/// trusts, and the scopes every request needs. Give it to
/// [`McpServer::oauth`](crate::McpServer::oauth).
///
/// ```
/// use durable_mcp::McpServer;
/// use durable_mcp::auth::OAuth;
///
/// let oauth = OAuth::new("https://mcp.example.com/mcp", ["https://login.example.com"])?
///     .scopes(["mcp"]);
/// let server = McpServer::new("reports", "1.0.0").oauth(oauth);
/// # Ok::<(), durable_mcp::auth::OAuthError>(())
/// ```
#[derive(Clone)]
pub struct OAuth {
    resource: CanonicalUrl,
    issuers: Vec<Rc<Issuer>>,
    scopes: Vec<String>,
    leeway: Duration,
    introspector: Option<Rc<Introspector>>,
    validator: Option<Rc<dyn TokenValidator>>,
    outbound: Option<Rc<dyn Outbound>>,
    /// The JWTs accepted lately.
    accepted: Rc<Verdicts>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("resource", &self.resource.to_string())
            .field("issuers", &self.issuer_ids())
            .field("scopes", &self.scopes)
            .field("introspection", &self.introspector.is_some())
            .field("validator", &self.validator.is_some())
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// Tokens issued for `resource` (the endpoint's URL, as clients are configured with it)
    /// by any of `issuers` (issuer identifiers, exactly as tokens carry them in `iss`).
    ///
    /// Nothing is fetched here: each issuer's metadata and keys are fetched when a token first
    /// needs them, so a host starts while its authorization server is unreachable.
    ///
    /// # Errors
    ///
    /// [`OAuthError`] for a resource or issuer that is not a usable URL.
    pub fn new(
        resource: &str,
        issuers: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Self, OAuthError> {
        let resource = CanonicalUrl::parse(resource)
            .ok_or_else(|| OAuthError::Resource(resource.to_owned()))?;
        let issuers = issuers
            .into_iter()
            .map(|issuer| {
                let issuer = issuer.as_ref().trim();
                if is_acceptable_issuer(issuer) {
                    Ok(Rc::new(Issuer::new(issuer.to_owned())))
                } else {
                    Err(OAuthError::Issuer(issuer.to_owned()))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        if issuers.is_empty() {
            return Err(OAuthError::NoIssuer);
        }
        Ok(OAuth {
            resource,
            issuers,
            scopes: Vec::new(),
            leeway: DEFAULT_LEEWAY,
            introspector: None,
            validator: None,
            outbound: None,
            accepted: Rc::default(),
        })
    }

    /// The configuration the settings give: `issuers` separated by commas (the value of
    /// [`ISSUER_VAR`]) and the resource (of [`RESOURCE_VAR`]).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn from_settings(issuers: &str, resource: &str) -> Result<Self, OAuthError> {
        OAuth::new(
            resource,
            issuers
                .split(',')
                .map(str::trim)
                .filter(|issuer| !issuer.is_empty()),
        )
    }

    /// The configuration of the settings [`ISSUER_VAR`], [`RESOURCE_VAR`] and [`SCOPES_VAR`],
    /// as a host read them: `None` when neither of the first two is set.
    ///
    /// # Errors
    ///
    /// A message naming the setting to fix: one of the two set without the other, or a value
    /// [`new`](Self::new) refuses.
    #[cfg_attr(
        not(any_host),
        allow(dead_code) // used by the hosts only
    )]
    pub(crate) fn from_host_settings(
        issuers: Option<String>,
        resource: Option<String>,
        scopes: Option<String>,
    ) -> Result<Option<Self>, String> {
        let (issuers, resource) = match (issuers, resource) {
            (None, None) => return Ok(None),
            (Some(issuers), Some(resource)) => (issuers, resource),
            (Some(_), None) => {
                return Err(format!(
                    "{ISSUER_VAR} is set without {RESOURCE_VAR}: set both"
                ));
            }
            (None, Some(_)) => {
                return Err(format!(
                    "{RESOURCE_VAR} is set without {ISSUER_VAR}: set both"
                ));
            }
        };
        let oauth = OAuth::from_settings(&issuers, &resource).map_err(|error| error.to_string())?;
        let scopes = scopes.unwrap_or_default();
        Ok(Some(oauth.scopes(
            scopes.split([' ', ',']).filter(|scope| !scope.is_empty()),
        )))
    }

    /// Requires `scopes` of every request (on top of what each tool needs; see
    /// [`TaskTool::scopes`](crate::TaskTool::scopes)). They are listed in the metadata and in
    /// every challenge.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Allows `leeway` between the server's clock and a token's `exp` and `nbf`
    /// (default 30 seconds).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Checks tokens that are not JWTs (opaque tokens) at the first issuer's introspection
    /// endpoint (RFC 7662; named by its metadata), authenticating as `client_id` with
    /// `client_secret` (HTTP Basic). Answers are reused for up to a minute, never past the
    /// token's expiry, so a revoked token may work for that long.
    #[must_use]
    pub fn introspection(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let credentials = Credentials {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        };
        let issuer = Rc::clone(&self.issuers[0]);
        self.introspector = Some(Rc::new(Introspector::new(
            issuer,
            credentials,
            self.resource.clone(),
        )));
        self
    }

    /// Checks every token with `validator` instead of the built-in validators: for tokens only
    /// the application can read (an opaque token of Cloudflare's `workers-oauth-provider`, an
    /// API gateway's session). The validator must check the token's audience itself. The
    /// metadata, challenges, scopes and task binding stay the server's.
    #[must_use]
    pub fn validator(mut self, validator: impl TokenValidator + 'static) -> Self {
        self.validator = Some(Rc::new(validator));
        self
    }

    /// The endpoint's canonical URL.
    pub fn resource(&self) -> String {
        self.resource.to_string()
    }

    /// The trusted issuers.
    pub fn issuer_ids(&self) -> Vec<&str> {
        self.issuers
            .iter()
            .map(|issuer| issuer.id.as_str())
            .collect()
    }

    /// Where the endpoint's metadata is published (the URL named in every challenge).
    pub fn metadata_url(&self) -> String {
        self.resource.metadata_url()
    }

    /// The scopes every request needs.
    pub(crate) fn required_scopes(&self) -> &[String] {
        &self.scopes
    }

    pub(crate) fn canonical_resource(&self) -> &CanonicalUrl {
        &self.resource
    }

    /// Sets how this host reaches authorization servers, unless one was set already.
    #[cfg_attr(
        not(any_host),
        allow(dead_code) // used by the hosts only
    )]
    pub(crate) fn reach_through(&mut self, outbound: Rc<dyn Outbound>) {
        self.outbound.get_or_insert(outbound);
    }

    /// The caller `token` speaks for.
    pub(crate) async fn validate(&self, token: &str) -> Result<Principal, TokenRefusal> {
        if let Some(validator) = &self.validator {
            return validator.validate(token).await;
        }
        let Some(outbound) = self.outbound.as_deref() else {
            return Err(TokenRefusal::Unavailable(
                "this build has no HTTP client to reach the authorization server (enable the \
                 native or cloudflare feature, or give OAuth::validator)"
                    .into(),
            ));
        };
        let is_jwt = JwtValidator::looks_like_jwt(token);
        match &self.introspector {
            Some(introspector) if !is_jwt => introspector.validate(token, outbound).await,
            _ => {
                let now = outbound.now();
                if let Some(accepted) = self.accepted.get(token, now) {
                    return accepted;
                }
                let jwt = JwtValidator {
                    issuers: &self.issuers,
                    resource: &self.resource,
                    leeway: self.leeway,
                };
                let (principal, expires) = jwt.validate(token, outbound).await?;
                self.accepted
                    .keep(token, Ok(principal.clone()), now, expires);
                Ok(principal)
            }
        }
    }
}

/// An issuer identifier this server may trust: https, or http on loopback (a local
/// authorization server in development and tests).
fn is_acceptable_issuer(issuer: &str) -> bool {
    let Some(url) = CanonicalUrl::parse(issuer) else {
        return false;
    };
    let text = url.to_string();
    text.starts_with("https://")
        || ["http://127.0.0.1", "http://localhost", "http://[::1]"]
            .iter()
            .any(|local| {
                text.strip_prefix(local)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/']))
            })
}

#[cfg(test)]
mod tests;
