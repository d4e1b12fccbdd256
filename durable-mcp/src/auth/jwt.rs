//! JWT access tokens (RFC 9068): checked against the keys of the issuer they name. The same
//! code on both hosts; only the signature check itself is each host's (see `signature`).
//!
//! The order matters: everything that can be checked without the issuer's keys is checked
//! first, so that a malformed or foreign token never reaches the authorization server, and no
//! claim is believed before the signature over it verified.

use std::rc::Rc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, decode_header};
use serde::Deserialize;

use super::issuer::Issuer;
use super::outbound::Outbound;
use super::resource::CanonicalUrl;
use super::signature;
use super::{Principal, TokenRefusal};
use crate::core::Timestamp;

/// Signature algorithms accepted: public-key ones only. A symmetric algorithm would let
/// anyone who has the issuer's public key (everyone) sign tokens with it.
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Validates JWT access tokens of the trusted issuers for one resource.
#[derive(Debug)]
pub(crate) struct JwtValidator<'a> {
    pub(crate) issuers: &'a [Rc<Issuer>],
    pub(crate) resource: &'a CanonicalUrl,
    pub(crate) leeway: Duration,
}

/// What is read of a token before its signature is checked: only which issuer's keys to
/// check it with.
#[derive(Deserialize)]
struct Unverified {
    iss: String,
}

/// The claims read after the signature verified.
#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: Option<String>,
    #[serde(default)]
    aud: OneOrMany,
    /// Seconds since the epoch (a JSON number, perhaps with a fraction).
    exp: Option<f64>,
    nbf: Option<f64>,
    scope: Option<String>,
    /// Microsoft Entra and Okta write scopes here.
    #[serde(default)]
    scp: OneOrMany,
    client_id: Option<String>,
    azp: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(text) => text.split_whitespace().map(str::to_owned).collect(),
            OneOrMany::Many(items) => items,
        }
    }
}

impl JwtValidator<'_> {
    /// Whether `token` has the shape of a JWS (three base64url parts), so that this validator
    /// rather than introspection is the one to ask.
    pub(crate) fn looks_like_jwt(token: &str) -> bool {
        let parts: Vec<&str> = token.split('.').collect();
        parts.len() == 3 && parts[..2].iter().all(|part| !part.is_empty())
    }

    /// The caller `token` speaks for, and until when the token holds (its `exp`, with the
    /// leeway).
    pub(crate) async fn validate(
        &self,
        token: &str,
        outbound: &dyn Outbound,
    ) -> Result<(Principal, Timestamp), TokenRefusal> {
        let header =
            decode_header(token).map_err(|_| invalid("the token is not a well-formed JWT"))?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(invalid(format!(
                "tokens signed with {:?} are not accepted; this server accepts public-key signatures (RS*, PS*, ES*, EdDSA)",
                header.alg
            )));
        }
        if let Some(typ) = &header.typ
            && !is_access_token_type(typ)
        {
            return Err(invalid(format!(
                "a JWT of type {typ:?} is not an access token"
            )));
        }
        let claimed: Unverified = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|_| invalid("the token's claims are not readable, or it names no issuer"))?;
        let Some(issuer) = self.issuers.iter().find(|issuer| issuer.id == claimed.iss) else {
            return Err(invalid(format!(
                "the token was issued by {:?}, which this server does not trust",
                claimed.iss
            )));
        };
        let jwk = issuer.key(header.kid.as_deref(), outbound).await?;
        if !signature::key_fits(header.alg, &jwk) {
            return Err(invalid(
                "the token's algorithm does not match the issuer's key",
            ));
        }
        let (message, signature) = token
            .rsplit_once('.')
            .ok_or_else(|| invalid("the token is not a well-formed JWT"))?;
        match signature::verify(header.alg, &jwk, message.as_bytes(), signature).await {
            Ok(true) => {}
            Ok(false) => return Err(invalid("the token's signature does not verify")),
            Err(reason) => return Err(invalid(reason)),
        }
        let claims: Claims = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|error| invalid(format!("the token's claims are malformed: {error}")))?;
        self.check(claims, &issuer.id, outbound.now().as_millis())
    }

    /// The rules of RFC 9068 §4 over claims whose signature verified, at `now` (milliseconds
    /// since the epoch).
    fn check(
        &self,
        claims: Claims,
        issuer: &str,
        now: u64,
    ) -> Result<(Principal, Timestamp), TokenRefusal> {
        if claims.iss != issuer {
            return Err(invalid("the token's issuer does not match"));
        }
        let Some(subject) = claims.sub.filter(|sub| !sub.is_empty()) else {
            return Err(invalid("the token has no sub claim"));
        };
        #[allow(clippy::cast_precision_loss)] // milliseconds since the epoch fit an f64 exactly
        let now = now as f64 / 1000.0;
        let leeway = self.leeway.as_secs_f64();
        let expires = match claims.exp {
            None => return Err(invalid("the token has no exp claim")),
            Some(exp) if exp + leeway <= now => {
                return Err(invalid("the token has expired; get a new one"));
            }
            // Whole milliseconds, at most the latest time there is.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Some(exp) => Timestamp::from_millis(((exp + leeway) * 1000.0) as u64),
        };
        if claims.nbf.is_some_and(|nbf| nbf - leeway > now) {
            return Err(invalid("the token is not valid yet (nbf)"));
        }
        let audiences = claims.aud.into_vec();
        if !audiences.iter().any(|aud| self.resource.is_named_by(aud)) {
            return Err(invalid(format!(
                "the token is for {audiences:?}, not for this server ({}); ask the authorization server for a token with resource={}",
                self.resource, self.resource
            )));
        }
        let mut scopes = claims
            .scope
            .map(|scope| OneOrMany::One(scope).into_vec())
            .unwrap_or_default();
        scopes.extend(claims.scp.into_vec());
        let mut principal = Principal::new(claims.iss, subject, scopes);
        principal.client_id = claims.client_id.or(claims.azp);
        Ok((principal, expires))
    }
}

/// RFC 9068's `at+jwt` (or its media type form), a vendor's `…at+jwt`, or the generic `JWT`
/// many issuers still write; any other type (a logout token, a DPoP proof) is refused.
fn is_access_token_type(typ: &str) -> bool {
    let typ = typ.to_ascii_lowercase();
    typ == "jwt" || typ.ends_with("at+jwt")
}

fn invalid(reason: impl Into<String>) -> TokenRefusal {
    TokenRefusal::Invalid(reason.into())
}
