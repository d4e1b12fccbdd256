//! The inspector's web page: plain HTML, CSS and JavaScript over the JSON API. It holds no
//! data itself; it asks for the token and sends it with every API request.

use crate::rpc::HttpResponse;

const PAGE: &str = include_str!("page.html");

/// The page.
pub(super) fn page() -> HttpResponse {
    let mut page = HttpResponse::content(200, "text/html; charset=utf-8", PAGE);
    // The token is typed into this page: no other site may frame it.
    page.headers.push(("x-frame-options", "DENY".to_owned()));
    page.headers.push(("cache-control", "no-store".to_owned()));
    page
}
