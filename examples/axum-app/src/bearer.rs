//! The service's own bearer check: each token names one user, and the user it names is the
//! principal the MCP endpoint binds that caller's tasks to.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use durable_mcp::native::Authenticated;
use sha2::{Digest, Sha256};

/// The setting that lists the service's users and their tokens: `user:token` pairs separated
/// by commas (`alice:<token>,bob:<token>`).
pub const TOKENS_VAR: &str = "AXUM_APP_TOKENS";

/// The shortest token accepted: a short one can be guessed.
const MIN_TOKEN_LEN: usize = 16;

/// The users the service knows, by the digest of their token (a lookup by digest compares
/// no secret byte by byte).
#[derive(Clone)]
pub struct Tokens(Arc<HashMap<[u8; 32], String>>);

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the tokens, nor their digests.
        f.debug_struct("Tokens")
            .field("users", &self.0.len())
            .finish()
    }
}

/// Why the tokens setting is unusable.
#[derive(Debug)]
pub struct TokensError(String);

impl fmt::Display for TokensError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TokensError {}

impl Tokens {
    /// The users of `list`: `user:token` pairs separated by commas.
    ///
    /// # Errors
    ///
    /// A pair without a colon, an empty user, a token shorter than 16 characters, a token
    /// given twice, or no pair at all. The message never quotes a token.
    pub fn parse(list: &str) -> Result<Self, TokensError> {
        let mut users = HashMap::new();
        for (index, pair) in list.split(',').map(str::trim).enumerate() {
            let place = index + 1;
            let Some((user, token)) = pair.split_once(':') else {
                return Err(TokensError(format!(
                    "{TOKENS_VAR}: entry {place} is not `user:token`"
                )));
            };
            let (user, token) = (user.trim(), token.trim());
            if user.is_empty() {
                return Err(TokensError(format!(
                    "{TOKENS_VAR}: entry {place} names no user"
                )));
            }
            if token.len() < MIN_TOKEN_LEN {
                return Err(TokensError(format!(
                    "{TOKENS_VAR}: the token of {user:?} is shorter than {MIN_TOKEN_LEN} \
                     characters; make one with `openssl rand -hex 24`"
                )));
            }
            if users.insert(digest(token), user.to_owned()).is_some() {
                return Err(TokensError(format!(
                    "{TOKENS_VAR}: the token of {user:?} is given to another user too"
                )));
            }
        }
        Ok(Tokens(Arc::new(users)))
    }

    /// The users of [`TOKENS_VAR`].
    ///
    /// # Errors
    ///
    /// The setting is missing (the service refuses to serve MCP to anyone then) or unusable.
    pub fn from_env() -> Result<Self, TokensError> {
        let list = std::env::var(TOKENS_VAR).map_err(|_| {
            TokensError(format!(
                "{TOKENS_VAR} is not set: give the service's users and their tokens, as in \
                 {TOKENS_VAR}=alice:$(openssl rand -hex 24)"
            ))
        })?;
        Tokens::parse(&list)
    }

    /// The user `token` belongs to.
    fn user(&self, token: &str) -> Option<&str> {
        self.0.get(&digest(token)).map(String::as_str)
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The middleware: a request with a known token goes on, carrying its user as the
/// [`Authenticated`] principal; any other is answered 401 here and never reaches the
/// endpoint.
pub(crate) async fn check(
    State(tokens): State<Tokens>,
    mut request: Request,
    next: Next,
) -> Response {
    let token = (request.headers().get(header::AUTHORIZATION))
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    let Some(user) = token.and_then(|token| tokens.user(token.trim())) else {
        return refused();
    };
    let principal = Authenticated::new(user);
    tracing::debug!(user, "bearer token accepted");
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// HTTP 401 with the challenge RFC 6750 prescribes, and a JSON-RPC error an MCP client reads.
fn refused() -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32001, "message": "this service needs `Authorization: Bearer <token>`" },
    });
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"axum-app\""),
    );
    response
}
