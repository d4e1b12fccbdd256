//! Cross-origin access for web pages served from another origin: the preflight answer and
//! the headers every answer to an allowed origin carries.
//!
//! Only origins named with [`McpServer::allow_origin`](super::McpServer::allow_origin) are
//! answered; for any other origin the endpoint behaves as if CORS did not exist (the browser
//! then refuses the page the answer), and the Origin check still refuses foreign hosts.

use super::http::{Headers, HttpResponse};

/// The request headers a page may send: the MCP ones and what a fetch adds.
const ALLOWED_HEADERS: &str = "accept, authorization, content-type, last-event-id, \
     mcp-method, mcp-name, mcp-protocol-version, mcp-session-id";

/// How long a browser may keep a preflight answer, in seconds.
const MAX_AGE_SECONDS: &str = "600";

/// The origins allowed to call the endpoint from a web page, as `scheme://host[:port]`.
#[derive(Clone, Debug, Default)]
pub struct CorsPolicy {
    origins: Vec<String>,
}

impl CorsPolicy {
    /// Allows `origin` (`http://localhost:5173`; a trailing `/` is ignored, case is not
    /// significant).
    pub fn allow(&mut self, origin: &str) {
        self.origins.push(normalise(origin));
    }

    /// The request's `Origin` if it is one of the allowed origins.
    pub fn allowed_origin(&self, headers: &Headers) -> Option<String> {
        let origin = headers.get("origin")?;
        let normalised = normalise(&origin);
        self.origins.contains(&normalised).then_some(origin)
    }

    /// The answer to a preflight (`OPTIONS`) from an allowed origin; `None` for any other.
    pub fn preflight(&self, headers: &Headers) -> Option<HttpResponse> {
        let origin = self.allowed_origin(headers)?;
        let mut response = HttpResponse::empty(204);
        response.headers.extend([
            ("access-control-allow-origin", origin),
            ("access-control-allow-methods", "POST, OPTIONS".to_owned()),
            ("access-control-allow-headers", ALLOWED_HEADERS.to_owned()),
            ("access-control-max-age", MAX_AGE_SECONDS.to_owned()),
            ("vary", "origin".to_owned()),
        ]);
        Some(response)
    }

    /// Lets the page read `response`, the answer to a request from `origin` (what
    /// [`allowed_origin`](Self::allowed_origin) found).
    pub fn expose(origin: Option<String>, response: &mut HttpResponse) {
        if let Some(origin) = origin {
            response.headers.extend([
                ("access-control-allow-origin", origin),
                // A browser client reads the authorization challenge (RFC 9728 §5.1) to find
                // the authorization server.
                (
                    "access-control-expose-headers",
                    "mcp-session-id, www-authenticate".to_owned(),
                ),
                ("vary", "origin".to_owned()),
            ]);
        }
    }
}

fn normalise(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> CorsPolicy {
        let mut policy = CorsPolicy::default();
        policy.allow("http://LocalHost:5173/");
        policy
    }

    fn from(origin: &str) -> Headers {
        Headers::new([("Origin", origin)])
    }

    #[test]
    fn a_preflight_from_an_allowed_origin_names_it_and_the_mcp_headers() {
        let response = policy().preflight(&from("http://localhost:5173")).unwrap();
        assert_eq!(response.status, 204);
        let header = |name: &str| {
            response
                .headers
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.clone())
        };
        assert_eq!(
            header("access-control-allow-origin").as_deref(),
            Some("http://localhost:5173")
        );
        assert!(
            header("access-control-allow-headers")
                .unwrap()
                .contains("mcp-protocol-version")
        );
    }

    #[test]
    fn other_origins_get_nothing() {
        let policy = policy();
        for origin in [
            "http://localhost:5174",
            "http://localhost:5173.evil.example",
            "null",
        ] {
            assert!(policy.preflight(&from(origin)).is_none(), "{origin}");
            let mut response = HttpResponse::empty(200);
            CorsPolicy::expose(policy.allowed_origin(&from(origin)), &mut response);
            assert!(response.headers.is_empty(), "{origin}");
        }
        assert!(policy.preflight(&Headers::default()).is_none());
    }
}
