//! The server's side of MCP authorization: the [`OAuth`] it checks tokens with, and the
//! scopes each request and tool needs. Without the `oauth` feature no token is ever checked,
//! so no scope limits a caller and no metadata is served: the stand-ins at the end say so.

#[cfg(feature = "oauth")]
use std::rc::Rc;

use super::error::RpcError;
use super::http::HttpResponse;
use super::server::McpServer;
#[cfg(feature = "oauth")]
use super::server::ToolEntry;
#[cfg(feature = "oauth")]
use crate::auth::{OAuth, Refusal};

#[cfg(feature = "oauth")]
impl McpServer {
    /// Makes the endpoint an OAuth 2.1 resource server (MCP authorization): every request
    /// needs an access token `oauth` accepts, each task is bound to the issuer and subject of
    /// the token that started it, and the endpoint's Protected Resource Metadata is served.
    /// See the [`auth`](crate::auth) module. Takes the place of
    /// [`authenticate`](Self::authenticate).
    ///
    /// Both hosts set it from the settings [`ISSUER_VAR`](crate::settings::ISSUER_VAR) and
    /// [`RESOURCE_VAR`](crate::settings::RESOURCE_VAR) when the server has none.
    #[must_use]
    pub fn oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// The Protected Resource Metadata answer for `path`, if the server checks tokens and
    /// `path` is one of its metadata paths (see [`Router::well_known`](super::Router::well_known)).
    pub(crate) fn well_known(&self, method: &str, path: &str) -> Option<HttpResponse> {
        let oauth = self.oauth.as_ref()?;
        crate::auth::metadata_response(oauth, method, path, &self.all_scopes())
    }

    /// Lets the server's OAuth validators reach authorization servers through `outbound`
    /// (the host's HTTP client), unless they were given one.
    #[cfg_attr(
        not(any_host),
        allow(dead_code) // used by the hosts only
    )]
    pub(crate) fn reach_authorization_servers(
        &mut self,
        outbound: Rc<dyn crate::auth::outbound::Outbound>,
    ) {
        if let Some(oauth) = &mut self.oauth {
            oauth.reach_through(outbound);
        }
    }

    /// The server's OAuth configuration, if it checks tokens.
    pub fn oauth_config(&self) -> Option<&OAuth> {
        self.oauth.as_ref()
    }

    /// Every scope a request may need: those of every request, then each tool's, once each.
    pub(crate) fn all_scopes(&self) -> Vec<String> {
        let required = self.oauth.iter().flat_map(|oauth| oauth.required_scopes());
        let mut scopes: Vec<String> = Vec::new();
        for scope in required.chain(self.tools.iter().flat_map(ToolEntry::scopes)) {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        scopes
    }

    /// The scopes a request needs: those of every request, and the tool's when it calls one.
    pub(crate) fn needed_scopes(&self, tool: Option<&str>) -> Vec<String> {
        let mut needed: Vec<String> = self
            .oauth
            .iter()
            .flat_map(|o| o.required_scopes())
            .cloned()
            .collect();
        let tool_scopes = tool
            .and_then(|name| self.find_tool(name))
            .map_or(&[][..], ToolEntry::scopes);
        for scope in tool_scopes {
            if !needed.contains(scope) {
                needed.push(scope.clone());
            }
        }
        needed
    }

    /// Whether some tool needs scopes of its own, so that a `tasks/*` request must learn a
    /// task's tool before it changes the task.
    pub(crate) fn has_scoped_tools(&self) -> bool {
        self.oauth.is_some() && self.tools.iter().any(|entry| !entry.scopes().is_empty())
    }

    /// Refuses with 403 `insufficient_scope` a caller whose token lacks a scope the tool
    /// `tool` needs. `granted` is `None` for a caller no token limits (no OAuth).
    pub(crate) fn check_scopes(
        &self,
        granted: Option<&[String]>,
        tool: &str,
    ) -> Result<(), RpcError> {
        let (Some(granted), Some(oauth)) = (granted, &self.oauth) else {
            return Ok(());
        };
        let needed = self.find_tool(tool).map_or(&[][..], ToolEntry::scopes);
        if needed.iter().all(|scope| granted.contains(scope)) {
            return Ok(());
        }
        let mut all = oauth.required_scopes().to_vec();
        all.extend(
            needed
                .iter()
                .filter(|scope| !all.contains(scope))
                .cloned()
                .collect::<Vec<_>>(),
        );
        Err(Refusal::InsufficientScope(all).answer(oauth, &[]))
    }

    /// Whether the server checks access tokens.
    #[cfg(native_host)]
    pub(crate) fn checks_tokens(&self) -> bool {
        self.oauth.is_some()
    }
}

// A server built without OAuth checks no token: no caller carries scopes to limit, and no
// metadata path exists. (A host whose settings ask for OAuth refuses to start: see
// `ServerSettings::read`.)
#[cfg(not(feature = "oauth"))]
impl McpServer {
    pub(crate) fn well_known(&self, _method: &str, _path: &str) -> Option<HttpResponse> {
        None
    }

    #[cfg(native_host)]
    pub(crate) fn checks_tokens(&self) -> bool {
        false
    }

    pub(crate) fn has_scoped_tools(&self) -> bool {
        false
    }

    pub(crate) fn check_scopes(
        &self,
        _granted: Option<&[String]>,
        _tool: &str,
    ) -> Result<(), RpcError> {
        Ok(())
    }
}
