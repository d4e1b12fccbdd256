//! Opaque access tokens, checked by asking the authorization server (RFC 7662), with each
//! answer kept for a short while so that a polling client costs one introspection a minute.

use std::rc::Rc;

use base64::Engine as _;
use serde::Deserialize;

use super::issuer::Issuer;
use super::outbound::Outbound;
use super::resource::CanonicalUrl;
use super::verdicts::Verdicts;
use super::{Principal, TokenRefusal};
use crate::core::Timestamp;

/// How the server authenticates itself to the introspection endpoint.
#[derive(Clone)]
pub(crate) struct Credentials {
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Validates opaque tokens through an issuer's introspection endpoint.
#[derive(Debug)]
pub(crate) struct Introspector {
    pub(crate) issuer: Rc<Issuer>,
    pub(crate) credentials: Credentials,
    pub(crate) resource: CanonicalUrl,
    /// Answers, refusals included.
    answers: Verdicts,
}

#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    scope: Option<String>,
    client_id: Option<String>,
    sub: Option<String>,
    iss: Option<String>,
    #[serde(default)]
    aud: Option<serde_json::Value>,
    exp: Option<u64>,
    nbf: Option<u64>,
}

impl Introspector {
    pub(crate) fn new(
        issuer: Rc<Issuer>,
        credentials: Credentials,
        resource: CanonicalUrl,
    ) -> Self {
        Introspector {
            issuer,
            credentials,
            resource,
            answers: Verdicts::default(),
        }
    }

    pub(crate) async fn validate(
        &self,
        token: &str,
        outbound: &dyn Outbound,
    ) -> Result<Principal, TokenRefusal> {
        let now = outbound.now();
        if let Some(answer) = self.answers.get(token, now) {
            return answer;
        }
        let answer = self.introspect(token, outbound).await;
        let until = match &answer {
            // Never past the token's own expiry; a refusal is kept for the full minute.
            Ok((_, Some(exp))) => Timestamp(exp.saturating_mul(1000)),
            Ok((_, None)) | Err(TokenRefusal::Invalid(_)) => Timestamp::MAX,
            // An outage is asked again on the next request.
            Err(_) => now,
        };
        let answer = answer.map(|(principal, _)| principal);
        self.answers.keep(token, answer.clone(), now, until);
        answer
    }

    /// The principal and expiry (seconds since the epoch) the endpoint gives `token`.
    async fn introspect(
        &self,
        token: &str,
        outbound: &dyn Outbound,
    ) -> Result<(Principal, Option<u64>), TokenRefusal> {
        let metadata = self.issuer.metadata(outbound).await?;
        let Some(endpoint) = metadata.introspection_endpoint else {
            return Err(TokenRefusal::Unavailable(format!(
                "the metadata of {} names no introspection_endpoint",
                self.issuer.id
            )));
        };
        let form = format!("token={}&token_type_hint=access_token", form_encode(token));
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!(
                "{}:{}",
                form_encode(&self.credentials.client_id),
                form_encode(&self.credentials.client_secret)
            ))
        );
        let answer: Answer = outbound
            .post_form(&endpoint, form, Some(basic))
            .await
            .and_then(|fetched| fetched.json(&format!("the introspection endpoint {endpoint}")))
            .map_err(TokenRefusal::Unavailable)?;
        self.principal_of(answer, outbound.now())
    }

    fn principal_of(
        &self,
        answer: Answer,
        now: Timestamp,
    ) -> Result<(Principal, Option<u64>), TokenRefusal> {
        let invalid = |reason: &str| Err(TokenRefusal::Invalid(reason.to_owned()));
        if !answer.active {
            return invalid(
                "the authorization server says the token is not active (expired, revoked or unknown)",
            );
        }
        let seconds = now.as_millis() / 1000;
        if answer.exp.is_some_and(|exp| exp <= seconds) {
            return invalid("the token has expired; get a new one");
        }
        if answer.nbf.is_some_and(|nbf| nbf > seconds) {
            return invalid("the token is not valid yet (nbf)");
        }
        let audiences: Vec<String> = match answer.aud {
            Some(serde_json::Value::String(one)) => vec![one],
            Some(serde_json::Value::Array(many)) => many
                .into_iter()
                .filter_map(|aud| aud.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        if !audiences.iter().any(|aud| self.resource.is_named_by(aud)) {
            return Err(TokenRefusal::Invalid(format!(
                "the token is not for this server ({}); ask the authorization server for a token with resource={}",
                self.resource, self.resource
            )));
        }
        if answer
            .iss
            .as_ref()
            .is_some_and(|iss| *iss != self.issuer.id)
        {
            return invalid("the token was issued by another authorization server");
        }
        let Some(subject) = answer.sub else {
            return invalid("the authorization server names no subject (sub) for the token");
        };
        let scopes = answer.scope.unwrap_or_default();
        let mut principal =
            Principal::new(self.issuer.id.clone(), subject, scopes.split_whitespace());
        principal.client_id = answer.client_id;
        Ok((principal, answer.exp))
    }
}

/// `application/x-www-form-urlencoded` for one value.
fn form_encode(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                encoded.push(byte as char);
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}
