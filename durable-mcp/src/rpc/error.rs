//! A request the router refuses: the JSON-RPC error plus the HTTP status it travels with.

use serde_json::json;

use crate::core::EngineError;
use crate::runtime::RouteError;
use crate::wire::{ClientCapabilities, ErrorObject, SUPPORTED_VERSIONS, code};

/// A refusal: what the client is told, and with which HTTP status.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The HTTP status: 400 for protocol errors, 404 for unknown methods, 200 for errors of a
    /// well-formed call.
    pub status: u16,
    /// The JSON-RPC error.
    pub error: ErrorObject,
    /// The `WWW-Authenticate` challenge sent with a 401 or 403 of MCP authorization.
    pub(crate) challenge: Option<String>,
}

impl RpcError {
    fn new(status: u16, code: i64, message: impl Into<String>) -> Self {
        RpcError::refused(status, code, message)
    }

    /// `error` sent with `status`.
    pub(crate) fn with_status(status: u16, error: ErrorObject) -> Self {
        RpcError {
            status,
            error,
            challenge: None,
        }
    }

    /// The error `code` with `message`, sent with `status`.
    pub(crate) fn refused(status: u16, code: i64, message: impl Into<String>) -> Self {
        RpcError::with_status(status, ErrorObject::new(code, message))
    }

    /// The `WWW-Authenticate` challenge this refusal carries, if it is one of MCP
    /// authorization's.
    pub fn challenge(&self) -> Option<&str> {
        self.challenge.as_deref()
    }

    /// The body is not JSON (-32700).
    pub fn parse(reason: impl std::fmt::Display) -> Self {
        Self::new(400, code::PARSE_ERROR, format!("Parse error: {reason}"))
    }

    /// The body is not a JSON-RPC 2.0 request (-32600).
    pub fn invalid_request(reason: impl Into<String>) -> Self {
        Self::new(400, code::INVALID_REQUEST, reason)
    }

    /// No such method (-32601, HTTP 404).
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            404,
            code::METHOD_NOT_FOUND,
            format!(
                "Method not found: {method:?} (this server speaks MCP {} without sessions; \
                 call server/discover to see what it serves)",
                SUPPORTED_VERSIONS.join(", ")
            ),
        )
    }

    /// The per-request `_meta` envelope is missing or malformed (-32602, HTTP 400).
    pub fn envelope(reason: impl std::fmt::Display) -> Self {
        Self::new(
            400,
            code::INVALID_PARAMS,
            format!(
                "Invalid params: {reason}; every request carries params._meta with \
                 \"io.modelcontextprotocol/protocolVersion\" and \
                 \"io.modelcontextprotocol/clientCapabilities\""
            ),
        )
    }

    /// Parameters of the wrong shape, or naming something that does not exist (-32602).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(200, code::INVALID_PARAMS, message)
    }

    /// The request is in a revision this server does not speak (-32022, HTTP 400).
    pub fn unsupported_version(requested: &str) -> Self {
        let mut error = Self::new(
            400,
            code::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version {requested:?}; this server speaks {}",
                SUPPORTED_VERSIONS.join(", ")
            ),
        );
        error.error.data = Some(json!({ "supported": SUPPORTED_VERSIONS, "requested": requested }));
        error
    }

    /// An HTTP header disagrees with the body or is missing (-32020, HTTP 400).
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(400, code::HEADER_MISMATCH, message)
    }

    /// The request needs the Tasks extension, which the client did not declare (-32021,
    /// HTTP 400).
    pub fn tasks_required(what: &str) -> Self {
        let mut error = Self::new(
            400,
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "Missing required client capability: {what} needs the \
                 io.modelcontextprotocol/tasks extension declared in this request's \
                 _meta clientCapabilities.extensions"
            ),
        );
        error.error.data =
            Some(json!({ "requiredCapabilities": ClientCapabilities::tasks_only() }));
        error
    }

    /// The request was not authenticated (HTTP 401).
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, code::UNAUTHORIZED, message)
    }

    /// The server cannot take the request now, and says when to try again (HTTP 503 with
    /// `Retry-After: <seconds>`): nothing was stored.
    pub fn unavailable(message: impl Into<String>, retry_after_seconds: u64) -> Self {
        let mut error = Self::new(503, code::INTERNAL_ERROR, message);
        error.error.data = Some(json!({ "retryAfter": retry_after_seconds }));
        error
    }

    /// The seconds after which to try again, for an [`unavailable`](Self::unavailable)
    /// answer.
    pub fn retry_after(&self) -> Option<u64> {
        if self.status != 503 {
            return None;
        }
        self.error.data.as_ref()?.get("retryAfter")?.as_u64()
    }

    /// The server failed (-32603).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, code::INTERNAL_ERROR, message)
    }

    /// An engine error on a task request, as [`RouteError`] sorts it.
    pub fn from_engine(error: EngineError) -> Self {
        RpcError::from(RouteError::from(error))
    }
}

impl From<RouteError> for RpcError {
    /// A task operation that did not happen: unknown tasks and bad payloads are the caller's
    /// problem (-32602); a busy host says when to try again (HTTP 503); a failed one is the
    /// server's (-32603).
    fn from(error: RouteError) -> Self {
        match error {
            RouteError::NotFound(message) => {
                Self::invalid_params(format!("Failed to retrieve task: {message}"))
            }
            RouteError::Refused(message) => Self::invalid_params(message),
            RouteError::Busy {
                message,
                retry_after,
            } => Self::unavailable(message, retry_after.as_secs().max(1)),
            RouteError::Failed(message) => Self::internal(message),
        }
    }
}
