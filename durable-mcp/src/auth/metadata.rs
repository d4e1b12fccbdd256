//! The Protected Resource Metadata document (RFC 9728 §2), at the well-known path and at the
//! path-suffixed form for the endpoint, readable by browser clients from any origin.

use serde_json::json;

use super::OAuth;
use super::resource::METADATA_PATH;
use crate::rpc::HttpResponse;

/// The answer to a request for `path` when it is one of the metadata paths of `oauth`'s
/// resource: `None` for every other path. `scopes` are every scope the server may ask for.
pub(crate) fn metadata_response(
    oauth: &OAuth,
    method: &str,
    path: &str,
    scopes: &[String],
) -> Option<HttpResponse> {
    let resource = oauth.canonical_resource();
    let path = path.trim_end_matches('/');
    if path != METADATA_PATH && path != resource.metadata_path() {
        return None;
    }
    let mut response = match method {
        "GET" | "HEAD" => {
            // `offline_access` is the authorization server's business (refresh tokens), never
            // a scope of this resource.
            let scopes: Vec<&String> = scopes
                .iter()
                .filter(|scope| *scope != "offline_access")
                .collect();
            let mut document = json!({
                "resource": resource.to_string(),
                "authorization_servers": oauth.issuer_ids(),
                "bearer_methods_supported": ["header"],
            });
            if !scopes.is_empty() {
                document["scopes_supported"] = json!(scopes);
            }
            let mut response = HttpResponse::json(200, &document);
            response
                .headers
                .push(("cache-control", "max-age=3600".to_owned()));
            response
        }
        "OPTIONS" => {
            let mut response = HttpResponse::empty(204);
            response
                .headers
                .push(("access-control-allow-methods", "GET, OPTIONS".to_owned()));
            response.headers.push((
                "access-control-allow-headers",
                "mcp-protocol-version".to_owned(),
            ));
            response
        }
        _ => {
            let mut response = HttpResponse::empty(405);
            response
                .headers
                .push(("allow", "GET, HEAD, OPTIONS".to_owned()));
            response
        }
    };
    // Public metadata: a web client on any origin must be able to read it (RFC 9728 §3).
    response
        .headers
        .push(("access-control-allow-origin", "*".to_owned()));
    Some(response)
}
