//! The HTTP-level checks of the 2026-07-28 transport: the routing headers must agree with the
//! body, and `Host`/`Origin` must name an allowed host.

use super::error::RpcError;
use super::http::Headers;
use super::server::OriginPolicy;
use base64::Engine as _;

/// The header carrying the request's protocol version.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The header carrying the JSON-RPC method.
pub const METHOD_HEADER: &str = "mcp-method";
/// The header carrying the tool name, resource URI or task id.
pub const NAME_HEADER: &str = "mcp-name";

/// A header value as sent, with the `=?base64?...?=` form (used for values that are not plain
/// ASCII) decoded.
pub fn decode_header_value(value: &str) -> Result<String, String> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|error| format!("{value:?} is not valid base64: {error}"))?;
    String::from_utf8(bytes).map_err(|_| format!("{value:?} does not decode to UTF-8"))
}

/// Checks that header `name` is present and, decoded, equals `expected`.
pub fn expect_header(headers: &Headers, name: &str, expected: &str) -> Result<(), RpcError> {
    let Some(raw) = headers.get(name) else {
        return Err(RpcError::header_mismatch(format!(
            "Header mismatch: the {name} header is required and must be {expected:?}"
        )));
    };
    let sent = decode_header_value(raw.trim()).map_err(|reason| {
        RpcError::header_mismatch(format!("Header mismatch: {name}: {reason}"))
    })?;
    if sent == expected {
        Ok(())
    } else {
        Err(RpcError::header_mismatch(format!(
            "Header mismatch: {name} is {sent:?} but the body says {expected:?}"
        )))
    }
}

/// The schema keyword that mirrors a tool argument into a `Mcp-Param-<Name>` header.
pub const PARAM_HEADER_KEYWORD: &str = "x-mcp-header";

/// Checks the `Mcp-Param-<Name>` headers of a tool call: every top-level argument whose schema
/// property carries `"x-mcp-header": "<Name>"` must be mirrored, exactly, in that header (so
/// that a proxy routing on the header sees what the tool gets).
pub fn check_param_headers(
    input_schema: &serde_json::Value,
    arguments: &serde_json::Value,
    headers: &Headers,
) -> Result<(), RpcError> {
    let Some(properties) = input_schema["properties"].as_object() else {
        return Ok(());
    };
    for (argument, schema) in properties {
        let Some(name) = schema[PARAM_HEADER_KEYWORD].as_str() else {
            continue;
        };
        let header = format!("mcp-param-{}", name.to_ascii_lowercase());
        match (&arguments[argument.as_str()], headers.get(&header)) {
            (serde_json::Value::Null, None) => {}
            (serde_json::Value::Null, Some(_)) => {
                return Err(RpcError::header_mismatch(format!(
                    "Header mismatch: {header} is sent but argument {argument:?} is not"
                )));
            }
            (value, _) => {
                let expected = match value {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                expect_header(headers, &header, &expected)?;
            }
        }
    }
    Ok(())
}

/// Refuses (HTTP 403) a request whose `Host` or `Origin` names a host the policy does not
/// allow, so that a web page cannot reach a local server through DNS rebinding. An `Origin`
/// the server lets pages call from (`cross_origin`, see [`CorsPolicy`](super::CorsPolicy)) is
/// not checked again.
pub fn check_origin(
    headers: &Headers,
    policy: &OriginPolicy,
    cross_origin: bool,
) -> Result<(), RpcError> {
    if policy.any {
        return Ok(());
    }
    let allowed = |host: &str| {
        policy
            .hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
    };
    let mut hosts = headers.all("host");
    let mut own_host = None;
    if let Some(host) = hosts.next() {
        if hosts.next().is_some() {
            return Err(RpcError::invalid_request(
                "the request has several Host headers; send exactly one",
            ));
        }
        let name = authority_host(host)
            .filter(|name| allowed(name) || under_any(name, &policy.domains))
            .ok_or_else(|| forbidden(format!("the Host header {host:?} is not an allowed host")))?;
        own_host = Some(name);
    }
    // A page served from the request's own (accepted) host is the same site.
    let same_site = |name: &str| own_host.is_some_and(|own| own.eq_ignore_ascii_case(name));
    if let Some(origin) = headers.get("origin").filter(|_| !cross_origin)
        && !origin_host(&origin).is_some_and(|name| allowed(name) || same_site(name))
    {
        return Err(forbidden(format!(
            "the Origin header {origin:?} is not an allowed origin"
        )));
    }
    Ok(())
}

/// Whether `host` is a subdomain of one of `domains` (not the domain itself).
fn under_any(host: &str, domains: &[String]) -> bool {
    domains.iter().any(|domain| {
        host.len() > domain.len() + 1
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            && host[host.len() - domain.len()..].eq_ignore_ascii_case(domain)
    })
}

/// The host of an `Origin` (`scheme://host[:port]`), or `None` when it is not one: `null`,
/// a path, or user information (`http://localhost@evil.example` names `evil.example`, and is
/// refused rather than guessed at).
fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, authority) = origin.trim().split_once("://")?;
    let scheme_ok = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return None;
    }
    authority_host(authority.strip_suffix('/').unwrap_or(authority))
}

/// The host of an authority (`host`, `host:port`, `[v6]:port`), or `None` when it carries
/// anything else: user information, a path, a list, spaces, a port that is not a number.
fn authority_host(authority: &str) -> Option<&str> {
    let authority = authority.trim();
    let stray = |c: char| matches!(c, '@' | '/' | '\\' | '?' | '#' | ',') || c.is_whitespace();
    if authority.is_empty() || authority.contains(stray) {
        return None;
    }
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        let port = if rest.is_empty() {
            None
        } else {
            Some(rest.strip_prefix(':')?)
        };
        (host, port)
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port_ok =
        port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    (!host.is_empty() && port_ok).then_some(host)
}

/// Whether a presented credential equals the expected one, in time that depends only on
/// their lengths, so that timing a refusal does not tell how much of a guess was right.
pub fn same_secret(presented: &str, expected: &str) -> bool {
    let (presented, expected) = (presented.as_bytes(), expected.as_bytes());
    let differences = presented
        .iter()
        .zip(expected)
        .fold(0u8, |seen, (a, b)| seen | (a ^ b));
    // Read through a black box, so the compiler cannot end the loop at the first difference.
    std::hint::black_box(differences) == 0 && presented.len() == expected.len()
}

fn forbidden(reason: String) -> RpcError {
    let mut error = RpcError::invalid_request(format!(
        "Forbidden: {reason}; allow it with McpServer::allow_host"
    ));
    error.status = 403;
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_base64_sentinel() {
        assert_eq!(decode_header_value("plain").unwrap(), "plain");
        assert_eq!(decode_header_value("=?base64?w6lsYW4=?=").unwrap(), "élan");
        assert!(decode_header_value("=?base64?***?=").is_err());
    }

    #[test]
    fn loopback_hosts_pass_and_others_are_refused() {
        let policy = OriginPolicy::default();
        let check = |pairs: &[(&str, &str)]| {
            check_origin(&Headers::new(pairs.iter().copied()), &policy, false).map_err(|e| e.status)
        };
        assert_eq!(check(&[("Host", "127.0.0.1:8787")]), Ok(()));
        assert_eq!(
            check(&[("Host", "[::1]:80"), ("Origin", "http://localhost:3000")]),
            Ok(())
        );
        assert_eq!(check(&[]), Ok(()));
        assert_eq!(check(&[("Host", "evil.example")]), Err(403));
        assert_eq!(
            check(&[("Host", "localhost"), ("Origin", "http://evil.example")]),
            Err(403)
        );
        assert_eq!(check(&[("Origin", "null")]), Err(403));
    }

    #[test]
    fn origins_are_parsed_as_urls_and_user_information_is_refused() {
        let policy = OriginPolicy::default();
        let check = |pairs: &[(&str, &str)]| {
            check_origin(&Headers::new(pairs.iter().copied()), &policy, false).map_err(|e| e.status)
        };
        for origin in [
            "http://localhost:80@evil.example",
            "http://localhost@evil.example",
            "http://evil.example#@localhost",
            "http://localhost:80/@evil.example",
            "http://localhost:eighty",
            "http://localhost, http://evil.example",
            "localhost",
            "://localhost",
            "http://",
        ] {
            assert_eq!(check(&[("Origin", origin)]), Err(403), "{origin}");
        }
        for origin in [
            "http://localhost",
            "https://127.0.0.1:8443",
            "http://[::1]:3000/",
        ] {
            assert_eq!(check(&[("Origin", origin)]), Ok(()), "{origin}");
        }
        assert_eq!(check(&[("Host", "localhost@evil.example")]), Err(403));
        assert_eq!(check(&[("Host", "[::1]")]), Ok(()));
    }

    #[test]
    fn hosts_under_a_domain_pass_and_their_pages_only_on_their_own_host() {
        let policy = OriginPolicy {
            domains: vec!["workers.dev".to_owned()],
            ..OriginPolicy::default()
        };
        let check = |pairs: &[(&str, &str)]| {
            check_origin(&Headers::new(pairs.iter().copied()), &policy, false).map_err(|e| e.status)
        };
        assert_eq!(check(&[("Host", "app.team.workers.dev")]), Ok(()));
        assert_eq!(check(&[("Host", "APP.team.Workers.Dev:443")]), Ok(()));
        for host in [
            "workers.dev",
            "evilworkers.dev",
            "workers.dev.evil.example",
            ".workers.dev",
        ] {
            assert_eq!(check(&[("Host", host)]), Err(403), "{host}");
        }
        let own_page = [
            ("Host", "app.team.workers.dev"),
            ("Origin", "https://app.team.workers.dev"),
        ];
        assert_eq!(check(&own_page), Ok(()));
        let other_page = [
            ("Host", "app.team.workers.dev"),
            ("Origin", "https://evil.team.workers.dev"),
        ];
        assert_eq!(check(&other_page), Err(403));
        // A page on the domain calling a local server is another site.
        let to_loopback = [
            ("Host", "127.0.0.1:8787"),
            ("Origin", "https://evil.workers.dev"),
        ];
        assert_eq!(check(&to_loopback), Err(403));
        assert_eq!(
            check(&[("Origin", "https://app.team.workers.dev")]),
            Err(403)
        );
    }

    #[test]
    fn same_secret_is_equality() {
        assert!(same_secret("Bearer abc", "Bearer abc"));
        for other in ["Bearer abd", "Bearer ab", "Bearer abcd", "", "bearer abc"] {
            assert!(!same_secret(other, "Bearer abc"), "{other}");
        }
    }

    #[test]
    fn several_host_headers_are_refused() {
        let policy = OriginPolicy::default();
        let headers = Headers::new([("Host", "localhost"), ("Host", "evil.example")]);
        let refused = check_origin(&headers, &policy, false).unwrap_err();
        assert_eq!(refused.status, 400);
        let headers = Headers::new([("Host", "localhost"), ("host", "localhost")]);
        assert!(check_origin(&headers, &policy, false).is_err());
    }
}
