//! The web page, served beside the MCP endpoint by both hosts: `/` and `/task/<id>` (the
//! same page, which reads the address), its script and styles, and `/demo/host`, which tells
//! the page which host it is on and whether it may restart it.

use durable_mcp::http::HttpResponse;
use serde_json::json;

const INDEX_HTML: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const STYLE_CSS: &str = include_str!("../web/style.css");

/// Which host serves the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    /// The native host, under the demo's supervisor: it can restart itself.
    Native,
    /// A Cloudflare Worker.
    Worker,
}

/// The path of the native host's restart button (a `POST`).
pub const RESTART_PATH: &str = "/demo/restart";

/// The answer to `method path` outside the MCP endpoint, or `None` (404).
pub fn page(method: &str, path: &str, host: Host) -> Option<HttpResponse> {
    if method != "GET" && method != "HEAD" {
        return None;
    }
    let (content_type, body) = match path {
        "/" => ("text/html; charset=utf-8", INDEX_HTML),
        "/app.js" => ("text/javascript; charset=utf-8", APP_JS),
        "/style.css" => ("text/css; charset=utf-8", STYLE_CSS),
        "/demo/host" => return Some(host_info(host)),
        _ if is_task_page(path) => ("text/html; charset=utf-8", INDEX_HTML),
        _ => return None,
    };
    let mut response = HttpResponse::content(200, content_type, body);
    response
        .headers
        .push(("cache-control", "no-cache".to_owned()));
    Some(response)
}

/// `/task/<id>`, with an id of the characters task ids are made of.
fn is_task_page(path: &str) -> bool {
    path.strip_prefix("/task/").is_some_and(|id| {
        !id.is_empty()
            && id.len() <= 128
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

fn host_info(host: Host) -> HttpResponse {
    let (name, restart) = match host {
        Host::Native => ("native", true),
        Host::Worker => ("worker", false),
    };
    HttpResponse::json(200, &json!({ "host": name, "restart": restart }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_the_page_at_the_root_and_at_task_addresses_only() {
        for path in ["/", "/task/abc-123_X"] {
            let page = page("GET", path, Host::Worker).unwrap();
            assert_eq!(page.body, INDEX_HTML.as_bytes(), "{path}");
        }
        for path in ["/task/", "/task/a/b", "/task/..", "/nope", "/mcp"] {
            assert!(page("GET", path, Host::Worker).is_none(), "{path}");
        }
        assert!(page("POST", "/", Host::Worker).is_none());
    }

    #[test]
    fn tells_the_page_whether_it_can_restart() {
        let info = page("GET", "/demo/host", Host::Native).unwrap().json_body();
        assert_eq!(info, json!({ "host": "native", "restart": true }));
        let info = page("GET", "/demo/host", Host::Worker).unwrap().json_body();
        assert_eq!(info["restart"], false);
    }
}
