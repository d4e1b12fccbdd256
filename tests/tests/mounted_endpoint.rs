//! The native host's endpoint as a tower `Service` (`NativeHost::mount`, feature `tower`),
//! called in process as an application's server calls it: who the request's `Authenticated`
//! extension names is the principal tasks are bound to, in place of the server's
//! `authenticate` hook but never past its OAuth check; and once the host is shut down, every
//! clone of the endpoint answers 503.

use bytes::Bytes;
use durable_mcp::auth::{OAuth, Principal, TokenRefusal};
use durable_mcp::native::{Authenticated, Endpoint, NativeHost};
use durable_mcp::{McpServer, TaskDefinition, TaskTool};
use durable_mcp_tests::mcp::McpClient;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tower_service::Service;

/// How a request is sent: with a bearer token, an `Authenticated` principal, the fixture's
/// principal header.
#[derive(Clone, Copy, Default)]
struct As<'a> {
    token: Option<&'a str>,
    authenticated: Option<&'a str>,
    fixture_principal: Option<&'a str>,
}

/// Sends `method` with `params` through `endpoint`: the HTTP status, a header's value, the body.
async fn send(
    endpoint: &Endpoint,
    who: As<'_>,
    method: &str,
    params: Value,
) -> (u16, Option<String>, Value) {
    let client = McpClient::new("http://127.0.0.1:1/mcp");
    let (body, headers) = client.build(method, params, true);
    let mut request = http::Request::post("/mcp");
    for (name, value) in &headers {
        request = request.header(name, value);
    }
    if let Some(token) = who.token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(principal) = who.fixture_principal {
        request = request.header("x-fixture-principal", principal);
    }
    let mut request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    if let Some(principal) = who.authenticated {
        request
            .extensions_mut()
            .insert(Authenticated::new(principal));
    }
    let response = endpoint.clone().call(request).await.unwrap();
    let status = response.status().as_u16();
    let retry_after =
        (response.headers().get("retry-after")).map(|value| value.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, retry_after, body)
}

/// A host of `server` mounted with its state in `dir`, two workers.
async fn mount(server: fn() -> McpServer, dir: &std::path::Path) -> Endpoint {
    NativeHost::new(server)
        .data_dir(dir)
        .workers(2)
        .mount()
        .await
        .expect("the host mounts")
}

/// Runs `test` on a multi-threaded runtime, as an axum application does.
fn on_the_applications_runtime(test: impl Future<Output = ()>) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(test);
}

/// Creates a `slow_compute` task of the fixtures as `who`: its id.
async fn create(endpoint: &Endpoint, who: As<'_>) -> String {
    let params = json!({ "name": "slow_compute", "arguments": { "seconds": 600, "label": "x" } });
    let (status, _, body) = send(endpoint, who, "tools/call", params).await;
    assert_eq!(status, 200, "{body}");
    body["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {body}"))
        .to_owned()
}

/// Whether `who` sees the task `id`.
async fn sees(endpoint: &Endpoint, who: As<'_>, id: &str) -> bool {
    let (_, _, body) = send(endpoint, who, "tasks/get", json!({ "taskId": id })).await;
    body.get("result").is_some()
}

#[test]
fn the_extensions_principal_takes_the_hooks_place_and_a_stopped_host_answers_503() {
    on_the_applications_runtime(async {
        let dir = tempfile::tempdir().unwrap();
        let endpoint = mount(conformance_server::server, dir.path()).await;
        let alice = As {
            authenticated: Some("alice"),
            ..As::default()
        };
        // The fixture's hook would bind this task to bob; the application said alice.
        let claimed_bob = As {
            fixture_principal: Some("bob"),
            ..alice
        };
        let id = create(&endpoint, claimed_bob).await;
        assert!(sees(&endpoint, alice, &id).await);
        let bob = As {
            fixture_principal: Some("bob"),
            ..As::default()
        };
        assert!(!sees(&endpoint, bob, &id).await, "bound to the hook's bob");
        assert!(!sees(&endpoint, As::default(), &id).await, "seen by anyone");

        let (kept, _, _) = send(&endpoint, alice, "tools/list", json!({})).await;
        assert_eq!(kept, 200);
        let clone = endpoint.clone();
        endpoint.shutdown().await.expect("a clean stop");
        let (status, retry_after, body) = send(&clone, alice, "tools/list", json!({})).await;
        assert_eq!((status, retry_after.as_deref()), (503, Some("1")), "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("has stopped"), "{body}");
        // The state directory is free again: a new host takes it, and finds the task.
        let again = mount(conformance_server::server, dir.path()).await;
        assert!(sees(&again, alice, &id).await);
        again.shutdown().await.unwrap();
    });
}

/// A server that checks tokens: each token `<name>.` speaks for `<name>` of the issuer.
fn checked() -> McpServer {
    let wait = TaskDefinition::new("wait", |cx, _| {
        Box::pin(async move {
            cx.sleep("nap", "1h").await?;
            Ok(json!({ "content": [] }))
        })
    });
    let oauth = OAuth::new("https://mcp.example/mcp", ["https://issuer.example"])
        .unwrap()
        .validator(|token: String| async move {
            let (name, _) = token
                .split_once('.')
                .ok_or_else(|| TokenRefusal::Invalid("not name.".to_owned()))?;
            Ok(Principal::new(
                "https://issuer.example",
                name,
                Vec::<String>::new(),
            ))
        });
    McpServer::new("checked", "0.0.0")
        .task(TaskTool::new(wait, json!({ "type": "object" })))
        .oauth(oauth)
}

#[test]
fn the_extension_lets_no_request_past_the_servers_own_token_check() {
    on_the_applications_runtime(async {
        let dir = tempfile::tempdir().unwrap();
        let endpoint = mount(checked, dir.path()).await;
        let only_extension = As {
            authenticated: Some("alice"),
            ..As::default()
        };
        let (status, _, body) = send(&endpoint, only_extension, "tools/list", json!({})).await;
        assert_eq!(status, 401, "{body}");

        // With a token, the token's principal is the task's, whatever the extension says.
        let mallory_with_alices_token = As {
            token: Some("alice."),
            authenticated: Some("mallory"),
            ..As::default()
        };
        let params = json!({ "name": "wait", "arguments": {} });
        let (status, _, body) =
            send(&endpoint, mallory_with_alices_token, "tools/call", params).await;
        assert_eq!(status, 200, "{body}");
        let id = body["result"]["taskId"]
            .as_str()
            .expect("a task")
            .to_owned();
        let alice = As {
            token: Some("alice."),
            ..As::default()
        };
        assert!(sees(&endpoint, alice, &id).await);
        let mallory = As {
            token: Some("mallory."),
            ..As::default()
        };
        assert!(!sees(&endpoint, mallory, &id).await);
        endpoint.shutdown().await.unwrap();
    });
}
