//! Reading the bearer token off a request, and the refusals (RFC 6750 §3, RFC 9728 §5.1):
//! each an HTTP status, a `WWW-Authenticate` challenge and a JSON-RPC error saying what to do.

use super::{OAuth, TokenRefusal};
use crate::rpc::{Headers, RpcError};
use crate::wire::code;

/// How long a client is asked to wait when the authorization server did not answer.
const RETRY_AFTER_SECONDS: u64 = 5;

/// Why a request is refused before (or instead of) reaching a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No bearer token.
    NoToken,
    /// A token in the query string (RFC 6750 §2.3 is not supported: URLs end up in logs).
    TokenInQuery,
    /// The token was checked and refused, or could not be checked.
    Token(TokenRefusal),
    /// The token lacks scopes the method or tool needs; all the scopes it needs.
    InsufficientScope(Vec<String>),
}

/// The request's bearer token: `None` without an `Authorization: Bearer` header.
///
/// # Errors
///
/// A token in `query` (the request URL's query string), several `Authorization` headers, or a
/// bearer value that is not an RFC 6750 token.
pub(crate) fn bearer_token(headers: &Headers, query: &str) -> Result<Option<String>, Refusal> {
    let in_query = query.split('&').any(|pair| {
        pair.split('=')
            .next()
            .is_some_and(|name| name.eq_ignore_ascii_case("access_token"))
    });
    if in_query {
        return Err(Refusal::TokenInQuery);
    }
    let mut values = headers.all("authorization");
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(malformed(
            "the request has more than one Authorization header",
        ));
    }
    let value = value.trim();
    let Some((scheme, token)) = value.split_once(' ') else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        // Another scheme (Basic, a signature) is not an access token: challenge for one.
        return Ok(None);
    }
    let token = token.trim();
    if token.is_empty() || !is_token68(token) {
        return Err(malformed(
            "the bearer token has characters a token cannot have",
        ));
    }
    Ok(Some(token.to_owned()))
}

/// RFC 7235's token68: what a bearer token may be made of.
fn is_token68(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body.bytes().all(|byte| {
            byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        })
}

fn malformed(reason: &str) -> Refusal {
    Refusal::Token(TokenRefusal::Invalid(reason.to_owned()))
}

impl Refusal {
    /// The answer to the client: `needed` are the scopes the request needs (named in the 401
    /// challenge so that the client asks for all of them at once).
    pub(crate) fn answer(self, oauth: &OAuth, needed: &[String]) -> RpcError {
        let metadata = oauth.metadata_url();
        let resource = oauth.resource();
        let (status, challenge, message) = match self {
            Refusal::NoToken => (
                401,
                challenge(None, needed, &metadata),
                format!(
                    "This server needs an OAuth access token issued for {resource}: its \
                     authorization server is named in {metadata}. Send the token as \
                     Authorization: Bearer <token>."
                ),
            ),
            Refusal::TokenInQuery => (
                400,
                challenge(
                    Some((
                        "invalid_request",
                        "tokens are not accepted in the query string",
                    )),
                    needed,
                    &metadata,
                ),
                "Access tokens are not accepted in the URL's query string; send the token as \
                 Authorization: Bearer <token>."
                    .to_owned(),
            ),
            Refusal::Token(TokenRefusal::Invalid(reason)) => (
                401,
                challenge(Some(("invalid_token", &reason)), needed, &metadata),
                format!(
                    "Invalid access token: {reason}. Get a new token for {resource} and retry."
                ),
            ),
            Refusal::Token(TokenRefusal::Unavailable(reason)) => {
                tracing::warn!(
                    target: crate::core::trace::TARGET,
                    "an access token could not be checked: {reason}"
                );
                return RpcError::unavailable(
                    "The access token could not be checked now: the authorization server did \
                     not answer. Try again shortly.",
                    RETRY_AFTER_SECONDS,
                );
            }
            Refusal::InsufficientScope(scopes) => {
                let listed = scopes.join(" ");
                (
                    403,
                    challenge(
                        Some((
                            "insufficient_scope",
                            &format!("this request needs the scopes {listed}"),
                        )),
                        &scopes,
                        &metadata,
                    ),
                    format!(
                        "The access token lacks scopes this request needs: get a token with \
                         scope \"{listed}\" for {resource} and retry."
                    ),
                )
            }
        };
        let mut error = RpcError::refused(status, code::UNAUTHORIZED, message);
        error.challenge = Some(challenge);
        error
    }
}

/// A `Bearer` challenge: the error and its description when there is one, the scopes, and the
/// metadata URL every client needs to find the authorization server.
fn challenge(error: Option<(&str, &str)>, scopes: &[String], metadata: &str) -> String {
    let mut parts = Vec::new();
    if let Some((error, description)) = error {
        parts.push(format!("error=\"{error}\""));
        parts.push(format!("error_description=\"{}\"", quotable(description)));
    }
    if !scopes.is_empty() {
        parts.push(format!("scope=\"{}\"", quotable(&scopes.join(" "))));
    }
    parts.push(format!("resource_metadata=\"{}\"", quotable(metadata)));
    format!("Bearer {}", parts.join(", "))
}

/// `text` as the inside of a quoted-string: RFC 6750 limits `error_description` to printable
/// ASCII without `"` and `\`.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '\''
            }
        })
        .collect()
}
