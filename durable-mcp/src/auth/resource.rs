//! The endpoint's canonical URL (RFC 8707 §2, RFC 9728 §3): the audience tokens must name, and
//! the address its Protected Resource Metadata is served from.

use std::fmt;

/// The well-known path of Protected Resource Metadata (RFC 9728 §3).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// An absolute `http` or `https` URL in canonical form: scheme and host lower-cased, the
/// scheme's default port dropped, no trailing slash (unless the path is only `/`), no query or
/// fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CanonicalUrl {
    /// `https://host[:port]`.
    origin: String,
    /// `""` or `/path`, without a trailing slash.
    path: String,
}

impl CanonicalUrl {
    /// Reads `text`; `None` unless it is an absolute http(s) URL without a query or fragment.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (scheme, rest) = text.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "https" => ":443",
            "http" => ":80",
            _ => return None,
        };
        if rest.contains(['?', '#']) || rest.chars().any(char::is_whitespace) {
            return None;
        }
        let (authority, path) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
        if authority.is_empty() || authority.contains('@') {
            return None;
        }
        let mut host = authority.to_ascii_lowercase();
        if host.ends_with(default_port) {
            host.truncate(host.len() - default_port.len());
        }
        Some(CanonicalUrl {
            origin: format!("{scheme}://{host}"),
            path: path.trim_end_matches('/').to_owned(),
        })
    }

    /// Where its metadata is published: the well-known path with this URL's path appended.
    pub(crate) fn metadata_url(&self) -> String {
        format!("{}{METADATA_PATH}{}", self.origin, self.path)
    }

    /// The path-suffixed well-known path for this URL (`/.well-known/oauth-protected-resource/mcp`).
    pub(crate) fn metadata_path(&self) -> String {
        format!("{METADATA_PATH}{}", self.path)
    }

    /// Whether `audience` names this URL in any of the forms clients send (a trailing slash, an
    /// upper-case scheme or host, the default port written out).
    pub(crate) fn is_named_by(&self, audience: &str) -> bool {
        CanonicalUrl::parse(audience).is_some_and(|named| named == *self)
    }
}

impl fmt::Display for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            // An origin's canonical form has no path at all (RFC 9728 §3.1).
            f.write_str(&self.origin)
        } else {
            write!(f, "{}{}", self.origin, self.path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_clients_send_name_the_same_resource() {
        let resource = CanonicalUrl::parse("https://mcp.example.com/mcp").unwrap();
        for form in [
            "https://mcp.example.com/mcp",
            "https://mcp.example.com/mcp/",
            "HTTPS://MCP.Example.com/mcp",
            "https://mcp.example.com:443/mcp",
        ] {
            assert!(resource.is_named_by(form), "{form}");
        }
        for other in [
            "https://mcp.example.com/MCP",
            "http://mcp.example.com/mcp",
            "https://mcp.example.com/mcp/other",
            "https://mcp.example.com",
            "https://mcp.example.com:8443/mcp",
            "mcp.example.com/mcp",
            "https://evil.example/mcp?https://mcp.example.com/mcp",
        ] {
            assert!(!resource.is_named_by(other), "{other}");
        }
    }

    #[test]
    fn metadata_lives_under_the_well_known_path_with_the_resource_path_appended() {
        let resource = CanonicalUrl::parse("HTTP://127.0.0.1:8787/mcp/").unwrap();
        assert_eq!(resource.to_string(), "http://127.0.0.1:8787/mcp");
        assert_eq!(
            resource.metadata_url(),
            "http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp"
        );
        let origin = CanonicalUrl::parse("https://api.example.com/").unwrap();
        assert_eq!(origin.to_string(), "https://api.example.com");
        assert_eq!(
            origin.metadata_url(),
            "https://api.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn what_is_not_an_absolute_http_url_without_query_is_refused() {
        for text in [
            "",
            "/mcp",
            "ftp://host/mcp",
            "https:///mcp",
            "https://user@host/mcp",
            "https://host/mcp?x=1",
            "https://host/mcp#frag",
            "https://ho st/mcp",
        ] {
            assert_eq!(CanonicalUrl::parse(text), None, "{text}");
        }
    }
}
