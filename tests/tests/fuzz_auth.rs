//! MCP authorization's reading of requests, fuzzed through the router: `Authorization` headers
//! of every shape (other schemes, bad token characters, JWT-shaped tokens with random headers
//! and claims, `alg: none`, HMAC algorithms) and query strings that may carry a token.
//!
//! Invariants: nothing panics; no such request is ever let through (the server trusts an
//! issuer whose keys cannot be fetched here, so the best a token can get is 503); every 400 and
//! 401 carries a `Bearer` challenge naming the metadata; a token is never echoed back, in the
//! body or in a header.

mod common;
mod fuzzing;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::block_on_ready;
use durable_mcp::auth::OAuth;
use durable_mcp::http::{Headers, HttpRequest, Router};
use durable_mcp::testing::Harness;
use durable_mcp::wire::{CallToolResult, Tool};
use durable_mcp::{McpServer, PlainTool, ToolCall};
use durable_mcp_tests::mcp::McpClient;
use proptest::prelude::*;
use serde_json::json;

const ISSUER: &str = "https://as.example";

fn router() -> Router {
    let echo = PlainTool::new(
        Tool::new("echo", json!({ "type": "object" })),
        |_: ToolCall| async { Ok(CallToolResult::text("echo").into()) },
    );
    let oauth = OAuth::new("https://mcp.example/mcp", [ISSUER])
        .unwrap()
        .scopes(["mcp"]);
    let server = McpServer::new("fuzz-auth", "0.0.0").tool(echo).oauth(oauth);
    let harness = Harness::new(&server);
    Router::new(server, harness.shared_engine())
}

/// JWT-shaped tokens: a JSON header and claims near what validators read, any signature.
fn jwt_like() -> impl Strategy<Value = String> {
    let alg = prop_oneof![
        Just("none".to_owned()),
        Just("HS256".to_owned()),
        Just("RS256".to_owned()),
        Just("ES256".to_owned()),
        Just("EdDSA".to_owned()),
        "[A-Za-z0-9]{0,6}"
    ];
    let iss = prop_oneof![
        Just(json!(ISSUER)),
        Just(json!("https://evil.example")),
        Just(json!(7)),
        Just(json!(null))
    ];
    let header = (
        alg,
        proptest::option::of("[a-z0-9+]{0,8}"),
        proptest::option::of("[a-z0-9]{0,4}"),
    )
        .prop_map(|(alg, typ, kid)| json!({ "alg": alg, "typ": typ, "kid": kid }).to_string());
    let claims = (iss, any::<i64>(), "[a-z:/.]{0,24}").prop_map(|(iss, exp, aud)| {
        json!({ "iss": iss, "sub": "x", "exp": exp, "aud": aud }).to_string()
    });
    let part = prop_oneof![
        header.clone().prop_map(|h| URL_SAFE_NO_PAD.encode(h)),
        "[A-Za-z0-9_-]{0,12}"
    ];
    (
        part,
        claims.prop_map(|c| URL_SAFE_NO_PAD.encode(c)),
        "[A-Za-z0-9_=-]{0,40}",
    )
        .prop_map(|(header, claims, signature)| format!("{header}.{claims}.{signature}"))
}

fn authorization() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(prop_oneof![
        "[ -~]{0,40}",
        "(Bearer|bearer|BEARER|Basic|DPoP) {0,2}[ -~]{0,40}",
        jwt_like().prop_map(|token| format!("Bearer {token}")),
    ])
}

fn query() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,20}",
        "(access_token|ACCESS_TOKEN|token)=[A-Za-z0-9.]{0,20}(&x=1)?",
        Just(String::new())
    ]
}

#[test]
fn no_authorization_header_or_query_gets_through_or_is_echoed() {
    let router = router();
    let client = McpClient::new("http://127.0.0.1:1/mcp");
    let (body, headers) = client.build(
        "tools/call",
        json!({ "name": "echo", "arguments": {} }),
        false,
    );
    fuzzing::run(
        "auth-headers",
        file!(),
        2_000,
        (authorization(), query()),
        |(authorization, query)| {
            let mut headers = headers.clone();
            if let Some(value) = &authorization {
                headers.push(("Authorization".to_owned(), value.clone()));
            }
            let request = HttpRequest {
                method: "POST".to_owned(),
                headers: Headers::new(headers),
                body: body.to_string().into_bytes(),
            };
            let response = block_on_ready(router.handle_with_query(request, &query));
            prop_assert!(
                matches!(response.status, 400 | 401 | 403 | 503),
                "{authorization:?} ?{query} answered {}",
                response.status
            );
            let challenge = response
                .headers
                .iter()
                .find(|(name, _)| *name == "www-authenticate");
            if matches!(response.status, 400 | 401) {
                let (_, challenge) = challenge.expect("a challenge");
                prop_assert!(challenge.starts_with("Bearer "), "{challenge}");
                prop_assert!(challenge.contains("resource_metadata=\""), "{challenge}");
            }
            let token = authorization
                .as_deref()
                .and_then(|value| value.split_once(' '))
                .map(|(_, token)| token.trim());
            if let Some(token) = token.filter(|token| token.len() >= 12) {
                let body = String::from_utf8_lossy(&response.body);
                prop_assert!(!body.contains(token), "the body echoes the token: {body}");
                for (name, value) in &response.headers {
                    prop_assert!(!value.contains(token), "{name} echoes the token: {value}");
                }
            }
            Ok(())
        },
    );
}
