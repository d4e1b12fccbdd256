//! The 2026-07-28 per-request envelope in `params._meta`, and the identity and capability
//! objects it carries.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol revision this crate speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// Every revision the router accepts (sent with -32022 and in `server/discover`).
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// The 2025 revisions, newest first: a request in one of them is the 2025 lane's (the
/// `mcp-2025` feature), whose `initialize` picks the client's if it is one of them, else the
/// newest.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The Tasks extension's identifier, in client and server capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// `_meta` key of the request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the lowest log level the client wants (deprecated in 2026-07-28, still
/// honoured).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key of the server's identity.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// A client's or server's name and version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// What a client declared it supports, for this one request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// Extensions by identifier (`{"io.modelcontextprotocol/tasks": {}}`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extensions: Map<String, Value>,
    /// Every other capability, kept as sent.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl ClientCapabilities {
    /// Whether the client declared the Tasks extension.
    pub fn supports_tasks(&self) -> bool {
        self.extensions.contains_key(TASKS_EXTENSION)
    }

    /// The capabilities object naming only the Tasks extension (for -32021's data).
    pub fn tasks_only() -> Value {
        serde_json::json!({ "extensions": { TASKS_EXTENSION: {} } })
    }
}

/// The envelope of one request, read from `params._meta`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct RequestMeta {
    /// The revision the request is written in.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub protocol_version: String,
    /// What the client supports for this request.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: ClientCapabilities,
    /// Who the client is, when it says.
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    pub client_info: Option<Implementation>,
}
