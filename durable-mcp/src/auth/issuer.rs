//! One trusted authorization server: its metadata (RFC 8414, or OpenID discovery) and its
//! signing keys, fetched when first needed and kept, refreshed when a token names a key the
//! server has not seen (at most once per [`REFRESH_INTERVAL`]).

use std::cell::RefCell;
use std::time::Duration;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use serde::Deserialize;

use super::TokenRefusal;
use super::outbound::Outbound;
use crate::core::Timestamp;

/// The shortest time between two fetches of an issuer's keys: a flood of tokens naming
/// unknown keys costs the authorization server one request per interval, per isolate or
/// worker thread.
pub(crate) const REFRESH_INTERVAL: Duration = Duration::from_secs(5);

/// How long fetched keys are used before they are fetched again on the next token.
pub(crate) const KEYS_LIFETIME: Duration = Duration::from_secs(60 * 60);

/// The parts of an authorization server's metadata the validators read.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ServerMetadata {
    issuer: String,
    jwks_uri: Option<String>,
    pub(crate) introspection_endpoint: Option<String>,
}

#[derive(Default)]
struct Known {
    metadata: Option<ServerMetadata>,
    keys: Option<(JwkSet, Timestamp)>,
    last_fetch: Option<Timestamp>,
}

/// A trusted issuer and what was learnt about it.
pub(crate) struct Issuer {
    /// Its identifier, exactly as tokens carry it in `iss`.
    pub(crate) id: String,
    known: RefCell<Known>,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Issuer {
    pub(crate) fn new(id: String) -> Self {
        Issuer {
            id,
            known: RefCell::default(),
        }
    }

    /// The key `kid` (or, for a token without one, the only key of the set), fetching the
    /// keys when none are known, they are old, or `kid` is new to them.
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
        outbound: &dyn Outbound,
    ) -> Result<Jwk, TokenRefusal> {
        let now = outbound.now();
        let (cached, fresh, may_fetch) = {
            let known = self.known.borrow();
            let cached = known.keys.as_ref().and_then(|(set, _)| pick(set, kid));
            let fresh = known
                .keys
                .as_ref()
                .is_some_and(|(_, at)| now.saturating_since(*at) < KEYS_LIFETIME);
            let may_fetch = known
                .last_fetch
                .is_none_or(|at| now.saturating_since(at) >= REFRESH_INTERVAL);
            (cached, fresh, may_fetch)
        };
        if let Some(key) = &cached
            && fresh
        {
            return Ok(key.clone());
        }
        if !may_fetch {
            return cached.ok_or_else(|| unknown_key(kid, &self.id));
        }
        self.known.borrow_mut().last_fetch = Some(now);
        match self.fetch_keys(outbound).await {
            Ok(set) => {
                let key = pick(&set, kid);
                self.known.borrow_mut().keys = Some((set, now));
                key.ok_or_else(|| unknown_key(kid, &self.id))
            }
            // Old keys still verify what they signed; an outage never lets a token through
            // that no known key signed.
            Err(reason) => cached.ok_or(TokenRefusal::Unavailable(reason)),
        }
    }

    /// The issuer's metadata, fetched once.
    pub(crate) async fn metadata(
        &self,
        outbound: &dyn Outbound,
    ) -> Result<ServerMetadata, TokenRefusal> {
        if let Some(metadata) = &self.known.borrow().metadata {
            return Ok(metadata.clone());
        }
        let metadata = discover(&self.id, outbound)
            .await
            .map_err(TokenRefusal::Unavailable)?;
        self.known.borrow_mut().metadata = Some(metadata.clone());
        Ok(metadata)
    }

    async fn fetch_keys(&self, outbound: &dyn Outbound) -> Result<JwkSet, String> {
        let metadata = self
            .metadata(outbound)
            .await
            .map_err(|refusal| refusal.to_string())?;
        let Some(jwks_uri) = metadata.jwks_uri else {
            return Err(format!("the metadata of {} has no jwks_uri", self.id));
        };
        outbound
            .get(&jwks_uri)
            .await
            .and_then(|fetched| fetched.json::<JwkSet>(&format!("the key set at {jwks_uri}")))
    }
}

/// The key for `kid`; a token without a `kid` may use a set's only key.
fn pick(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

fn unknown_key(kid: Option<&str>, issuer: &str) -> TokenRefusal {
    TokenRefusal::Invalid(match kid {
        Some(kid) => {
            format!("the token is signed with key id {kid:?}, which {issuer} does not publish")
        }
        None => format!("the token names no key id and {issuer} publishes several keys"),
    })
}

/// The metadata of `issuer`: RFC 8414's well-known document first, then OpenID discovery's,
/// each required to name `issuer` itself (RFC 8414 §3.3).
async fn discover(issuer: &str, outbound: &dyn Outbound) -> Result<ServerMetadata, String> {
    let mut reasons = Vec::new();
    for url in metadata_urls(issuer) {
        match outbound
            .get(&url)
            .await
            .and_then(|f| f.json::<ServerMetadata>(&url))
        {
            Ok(metadata) if metadata.issuer == issuer => return Ok(metadata),
            Ok(metadata) => reasons.push(format!(
                "{url} names the issuer {:?}, not {issuer:?}",
                metadata.issuer
            )),
            Err(reason) => reasons.push(reason),
        }
    }
    Err(format!("no metadata for {issuer}: {}", reasons.join("; ")))
}

/// Where the metadata of `issuer` may be: RFC 8414 §3.1 inserts the well-known segment
/// before the issuer's path, OpenID Connect Discovery appends it.
fn metadata_urls(issuer: &str) -> [String; 2] {
    let trimmed = issuer.trim_end_matches('/');
    let after_scheme = trimmed.find("://").map_or(0, |at| at + 3);
    let (origin, path) = match trimmed[after_scheme..].find('/') {
        Some(at) => trimmed.split_at(after_scheme + at),
        None => (trimmed, ""),
    };
    [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{trimmed}/.well-known/openid-configuration"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_discovery_specs_put_it() {
        assert_eq!(
            metadata_urls("https://as.example.com"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example.com/tenant/"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant",
                "https://as.example.com/tenant/.well-known/openid-configuration",
            ]
        );
    }
}
