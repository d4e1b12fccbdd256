//! The endpoint's request headers read, and its response built, with one JavaScript call each.
//! Going through worker's `Headers` and `Response` instead costs a call per header and per
//! part of the response, which on a poll adds up to more than the router's own work.

use worker::wasm_bindgen::{self, prelude::wasm_bindgen};
use worker::web_sys;

use crate::rpc::Headers;

#[wasm_bindgen(inline_js = r#"
export function header_lines(headers) {
  let lines = "";
  for (const [name, value] of headers) {
    lines += name + "\n" + value + "\n";
  }
  return lines;
}

export function response_of(body, status, lines) {
  const headers = new Headers();
  const parts = lines.split("\n");
  for (let at = 0; at + 1 < parts.length; at += 2) {
    headers.append(parts[at], parts[at + 1]);
  }
  return new Response(body.length > 0 ? body.slice() : null, { status, headers });
}
"#)]
extern "C" {
    /// Every header as `name\nvalue\n`: HTTP forbids line breaks in names and values.
    fn header_lines(headers: &web_sys::Headers) -> String;

    /// A response of `body` (copied out of the module's memory) with `status` and the headers
    /// of `lines`, written as [`header_lines`] reads them.
    fn response_of(body: &[u8], status: u16, lines: &str) -> web_sys::Response;
}

/// The request's headers.
pub(crate) fn request_headers(request: &web_sys::Request) -> Headers {
    let lines = header_lines(&request.headers());
    let mut lines = lines.split('\n');
    let mut pairs = Vec::new();
    while let (Some(name), Some(value)) = (lines.next(), lines.next()) {
        pairs.push((name, value));
    }
    Headers::new(pairs)
}

/// A response with a body held whole.
pub(crate) fn whole_response(
    body: &[u8],
    status: u16,
    headers: &[(&'static str, String)],
) -> web_sys::Response {
    let mut lines = String::new();
    for (name, value) in headers {
        lines.push_str(name);
        lines.push('\n');
        lines.push_str(value);
        lines.push('\n');
    }
    response_of(body, status, &lines)
}
