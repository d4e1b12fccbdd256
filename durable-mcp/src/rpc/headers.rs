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
    if let Some(host) = headers.get("host")
        && !allowed(host_name(&host))
    {
        return Err(forbidden(format!(
            "the Host header {host:?} is not an allowed host"
        )));
    }
    if let Some(origin) = headers.get("origin").filter(|_| !cross_origin) {
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or_default());
        match authority {
            Some(authority) if allowed(host_name(authority)) => {}
            _ => {
                return Err(forbidden(format!(
                    "the Origin header {origin:?} is not an allowed origin"
                )));
            }
        }
    }
    Ok(())
}

fn forbidden(reason: String) -> RpcError {
    let mut error = RpcError::invalid_request(format!(
        "Forbidden: {reason}; allow it with McpServer::allow_host"
    ));
    error.status = 403;
    error
}

/// The host name of an authority (`host`, `host:port`, `[v6]:port`), port removed.
fn host_name(authority: &str) -> &str {
    let authority = authority.trim();
    if authority.starts_with('[') {
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority.split(':').next().unwrap_or_default()
    }
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
}
