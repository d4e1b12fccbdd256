//! The router in process, over a harness engine: what a black-box test cannot set up
//! (authentication hooks, principals, failing stores, servers without prompts or completion).

mod common;

use std::cell::Cell;
use std::rc::Rc;

use common::{block_on_ready, reply, task};
use durable_mcp::CompletionCall;
use durable_mcp::PlainTool;
use durable_mcp::http::Router;
use durable_mcp::http::{Headers, HttpRequest, HttpResponse};
use durable_mcp::store::StoreError;
use durable_mcp::testing::{Harness, MemoryStore, ObservedStore, StoreCall, StoreObserver};
use durable_mcp::wire::{Completion, ErrorObject, GetPromptResult, Prompt, PromptArgument};
use durable_mcp::{McpServer, PromptCall, TaskTool};
use durable_mcp_tests::mcp::McpClient;
use serde_json::{Value, json};

fn server() -> McpServer {
    let definition = task("wait", |cx, _| {
        Box::pin(async move {
            cx.sleep("nap", "1h").await?;
            Ok(reply("woke"))
        })
    });
    McpServer::new("router-test", "0.0.0")
        .task(TaskTool::new(definition, json!({ "type": "object" })))
        .authenticate(|headers| match headers.get("authorization").as_deref() {
            Some("Bearer alice") => Ok(Some("alice".to_owned())),
            Some("Bearer bob") => Ok(Some("bob".to_owned())),
            Some(_) => Err("unknown token; send Authorization: Bearer <name>".to_owned()),
            None => Ok(None),
        })
}

/// Sends a well-formed request (built as a conforming client would) with an optional token.
fn send(router: &Router, token: Option<&str>, method: &str, params: Value) -> HttpResponse {
    let client = McpClient::new("http://127.0.0.1:1/mcp");
    let (body, mut headers) = client.build(method, params, true);
    if let Some(token) = token {
        headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
    }
    block_on_ready(router.handle(HttpRequest {
        method: "POST".to_owned(),
        headers: Headers::new(headers),
        body: body.to_string().into_bytes(),
    }))
}

fn created_by(router: &Router, token: Option<&str>) -> String {
    let response = send(
        router,
        token,
        "tools/call",
        json!({ "name": "wait", "arguments": {} }),
    );
    assert_eq!(response.status, 200, "{}", response.json_body());
    response.json_body()["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn error_code(response: &HttpResponse) -> i64 {
    response.json_body()["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {}", response.json_body()))
}

#[test]
fn a_task_is_visible_only_to_the_principal_that_created_it() {
    let server = server();
    let mut harness = Harness::new(&server);
    let router = Router::new(server, harness.shared_engine());
    let id = created_by(&router, Some("alice"));
    harness.run_until_idle();

    let get = |token| send(&router, token, "tasks/get", json!({ "taskId": id }));
    assert_eq!(
        get(Some("alice")).json_body()["result"]["status"],
        "working"
    );
    for stranger in [Some("bob"), None] {
        let response = get(stranger);
        assert_eq!(error_code(&response), -32602);
        // The refusal is the one an unknown id gets: no hint that the task exists.
        let unknown = send(
            &router,
            stranger,
            "tasks/get",
            json!({ "taskId": "f".repeat(32) }),
        );
        assert_eq!(
            response.json_body()["error"]["message"]
                .as_str()
                .map(|m| m.replace(&id, "ID")),
            unknown.json_body()["error"]["message"]
                .as_str()
                .map(|m| m.replace(&"f".repeat(32), "ID")),
        );
        let cancel = send(&router, stranger, "tasks/cancel", json!({ "taskId": id }));
        assert_eq!(error_code(&cancel), -32602);
        let update = send(
            &router,
            stranger,
            "tasks/update",
            json!({ "taskId": id, "inputResponses": {} }),
        );
        assert_eq!(error_code(&update), -32602);
    }
    assert_eq!(
        harness.journal(&id).task.status.as_str(),
        "working",
        "no stranger changed it"
    );

    let cancel = send(
        &router,
        Some("alice"),
        "tasks/cancel",
        json!({ "taskId": id }),
    );
    assert_eq!(cancel.status, 200);
    assert_eq!(harness.journal(&id).task.status.as_str(), "cancelled");
}

#[test]
fn a_refused_credential_is_http_401_and_creates_nothing() {
    let server = server();
    let harness = Harness::new(&server);
    let router = Router::new(server, harness.shared_engine());
    let response = send(
        &router,
        Some("mallory"),
        "tools/call",
        json!({ "name": "wait" }),
    );
    assert_eq!(response.status, 401);
    assert!(
        response.json_body()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Bearer")
    );
    assert!(harness.engine().host().store.task_ids().unwrap().is_empty());
}

/// Makes a store's creates, loads and applies fail while `failing` is set.
#[derive(Default)]
struct Flaky {
    failing: Cell<bool>,
}

impl StoreObserver for Flaky {
    fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        match call {
            StoreCall::Create { .. } | StoreCall::Load { .. } | StoreCall::Apply { .. }
                if self.failing.get() =>
            {
                Err(StoreError("the disk is on fire".to_owned()))
            }
            _ => Ok(()),
        }
    }
}

#[test]
fn internal_errors_reach_the_error_hook_and_the_client_as_32603() {
    let logged: Rc<std::cell::RefCell<Vec<(String, ErrorObject)>>> = Rc::default();
    let sink = Rc::clone(&logged);
    let server = server().on_error(move |method, error| {
        sink.borrow_mut().push((method.to_owned(), error.clone()));
    });
    let store = Rc::new(ObservedStore::new(MemoryStore::new(), Flaky::default()));
    let harness = Harness::with_store(&server, store.clone());
    let router = Router::new(server, harness.shared_engine());
    let id = created_by(&router, None);

    store.observer().failing.set(true);
    let response = send(&router, None, "tasks/get", json!({ "taskId": id }));
    assert_eq!(response.status, 500);
    assert_eq!(error_code(&response), -32603);
    let logged = logged.borrow();
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].0, "tasks/get");
    assert!(
        logged[0].1.message.contains("the disk is on fire"),
        "{:?}",
        logged[0].1
    );
}

#[test]
fn the_tasks_extension_is_advertised_only_with_a_task_tool() {
    let plain = McpServer::new("plain", "1").tool(PlainTool::new(
        durable_mcp::wire::Tool::new("noop", json!({ "type": "object" })),
        |_| async { Ok(durable_mcp::wire::CallToolResult::text("ok").into()) },
    ));
    let harness = Harness::new(&plain);
    let router = Router::new(plain, harness.shared_engine());
    let discovered = send(&router, None, "server/discover", json!({})).json_body();
    assert!(
        discovered["result"]["capabilities"]
            .get("extensions")
            .is_none()
    );

    let harness = Harness::new(&server());
    let router = Router::new(server(), harness.shared_engine());
    let discovered = send(&router, None, "server/discover", json!({})).json_body();
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
}

#[test]
fn tasks_get_publishes_the_status_meta_and_keeps_it_across_plain_statuses() {
    let definition = task("phases", |cx, _| {
        Box::pin(async move {
            cx.status("warming up")
                .meta(json!({ "phase": "warmup", "lap": 0 }))
                .await?;
            cx.sleep("warm", "1m").await?;
            cx.status("lap done").await?;
            cx.sleep("rest", "1h").await?;
            Ok(reply("done"))
        })
    });
    let server = McpServer::new("router-test", "0.0.0")
        .task(TaskTool::new(definition, json!({ "type": "object" })));
    let mut harness = Harness::new(&server);
    let router = Router::new(server, harness.shared_engine());
    let created = send(
        &router,
        None,
        "tools/call",
        json!({ "name": "phases", "arguments": {} }),
    )
    .json_body();
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = || send(&router, None, "tasks/get", json!({ "taskId": id })).json_body();
    const KEY: &str = "io.durable-mcp-server/status";

    // Nothing published yet: no status key, the server info stays.
    let before = get();
    assert!(before["result"]["_meta"].get(KEY).is_none(), "{before}");
    assert!(before["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());

    harness.run_until_idle();
    let warming = get();
    assert_eq!(warming["result"]["statusMessage"], "warming up");
    assert_eq!(
        warming["result"]["_meta"][KEY],
        json!({ "phase": "warmup", "lap": 0 }),
        "{warming}"
    );
    assert!(warming["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());

    // A later status without meta keeps the previous meta.
    harness.advance("1m");
    let lapped = get();
    assert_eq!(lapped["result"]["statusMessage"], "lap done");
    assert_eq!(
        lapped["result"]["_meta"][KEY],
        json!({ "phase": "warmup", "lap": 0 }),
        "{lapped}"
    );
}

// ---- prompts and completion ----

/// A server with one prompt that echoes who asked and a completion hook that reports what it
/// was given; `completion` off leaves the hook out.
fn prompt_server(completion: bool) -> McpServer {
    let server = McpServer::new("router-test", "0.0.0")
        .prompt(
            Prompt::new("whoami")
                .description("Says who asked.")
                .argument(PromptArgument::new("tone").required()),
            |call: PromptCall| async move {
                if call.arguments["tone"] == "rude" {
                    return Err(ErrorObject::new(-32001, "this prompt stays polite"));
                }
                let who = call.principal.unwrap_or_else(|| "anonymous".to_owned());
                Ok(GetPromptResult::user_text(format!("{} {who}", call.arguments["tone"])).into())
            },
        )
        .authenticate(|headers| Ok(headers.get("authorization").map(|_| "alice".to_owned())));
    if !completion {
        return server;
    }
    server.completion(|call: CompletionCall| async move {
        if call.argument.value == "many" {
            let values = (0..250).map(|n| format!("v{n}")).collect();
            return Ok(Completion::new(values));
        }
        // What the hook was given, as JSON for the test to read back.
        let seen = json!({
            "reference": call.reference,
            "argument": call.argument,
            "context": call.context,
            "principal": call.principal,
        });
        Ok(Completion::new(vec![seen.to_string()]))
    })
}

fn router_of(server: McpServer) -> Router {
    let harness = Harness::new(&server);
    Router::new(server, harness.shared_engine())
}

#[test]
fn prompts_and_completions_are_advertised_only_when_registered() {
    let capabilities = |server| {
        send(&router_of(server), None, "server/discover", json!({})).json_body()["result"]
            ["capabilities"]
            .clone()
    };
    let bare = capabilities(server());
    assert!(bare.get("prompts").is_none(), "{bare}");
    assert!(bare.get("completions").is_none(), "{bare}");
    let prompts_only = capabilities(prompt_server(false));
    assert_eq!(prompts_only["prompts"], json!({ "listChanged": true }));
    assert!(prompts_only.get("completions").is_none(), "{prompts_only}");
    let both = capabilities(prompt_server(true));
    assert_eq!(both["completions"], json!({}));
}

#[test]
fn a_server_without_prompts_does_not_serve_their_methods() {
    let router = router_of(server());
    for (method, params) in [
        ("prompts/list", json!({})),
        ("prompts/get", json!({ "name": "whoami" })),
    ] {
        let response = send(&router, None, method, params);
        assert_eq!(response.status, 404, "{method}");
        assert_eq!(error_code(&response), -32601, "{method}");
    }
}

#[test]
fn a_prompt_handler_sees_the_principal_and_its_errors_reach_the_client() {
    let router = router_of(prompt_server(false));
    let get = |token, tone: &str| {
        send(
            &router,
            token,
            "prompts/get",
            json!({ "name": "whoami", "arguments": { "tone": tone } }),
        )
    };
    let text = |response: HttpResponse| {
        response.json_body()["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(text(get(Some("alice"), "hello")), "hello alice");
    assert_eq!(text(get(None, "hi")), "hi anonymous");

    let refused = get(None, "rude");
    assert_eq!(refused.status, 200);
    assert_eq!(error_code(&refused), -32001);
    assert_eq!(
        refused.json_body()["error"]["message"],
        "this prompt stays polite"
    );
}

#[test]
fn completion_without_a_handler_answers_no_values_for_a_known_reference() {
    let router = router_of(prompt_server(false));
    let complete = |name: &str| {
        send(
            &router,
            None,
            "completion/complete",
            json!({
                "ref": { "type": "ref/prompt", "name": name },
                "argument": { "name": "tone", "value": "h" },
            }),
        )
    };
    let mut result = complete("whoami").json_body()["result"].take();
    result.as_object_mut().unwrap().remove("_meta");
    assert_eq!(
        result,
        json!({ "resultType": "complete", "completion": { "values": [] } })
    );
    assert_eq!(error_code(&complete("unknown")), -32602);
}

#[test]
fn the_completion_handler_gets_the_reference_argument_context_and_principal() {
    let router = router_of(prompt_server(true));
    let response = send(
        &router,
        Some("alice"),
        "completion/complete",
        json!({
            "ref": { "type": "ref/prompt", "name": "whoami" },
            "argument": { "name": "tone", "value": "fr" },
            "context": { "arguments": { "lang": "en" } },
        }),
    );
    let values = &response.json_body()["result"]["completion"]["values"];
    let seen: Value = serde_json::from_str(values[0].as_str().unwrap()).unwrap();
    assert_eq!(
        seen,
        json!({
            "reference": { "type": "ref/prompt", "name": "whoami" },
            "argument": { "name": "tone", "value": "fr" },
            "context": { "lang": "en" },
            "principal": "alice",
        })
    );
}

#[test]
fn completion_values_are_cut_to_one_hundred_with_has_more() {
    let router = router_of(prompt_server(true));
    let response = send(
        &router,
        None,
        "completion/complete",
        json!({
            "ref": { "type": "ref/prompt", "name": "whoami" },
            "argument": { "name": "tone", "value": "many" },
        }),
    );
    let completion = &response.json_body()["result"]["completion"];
    let values = completion["values"].as_array().unwrap();
    assert_eq!(values.len(), 100);
    assert_eq!((&values[0], &values[99]), (&json!("v0"), &json!("v99")));
    assert_eq!(completion["hasMore"], true);
    assert_eq!(completion["total"], 250);
}

/// A request `send` would make, from a web page at `origin`.
fn from_page(method: &str, origin: &str, call: &str) -> HttpRequest {
    let client = McpClient::new("http://127.0.0.1:1/mcp");
    let (body, mut headers) = client.build(call, json!({}), true);
    headers.push(("Origin".to_owned(), origin.to_owned()));
    HttpRequest {
        method: method.to_owned(),
        headers: Headers::new(headers),
        body: body.to_string().into_bytes(),
    }
}

fn header<'r>(response: &'r HttpResponse, name: &str) -> Option<&'r str> {
    let mut values = response.headers.iter().filter(|(key, _)| *key == name);
    let (_, value) = values.next()?;
    assert!(values.next().is_none(), "{name} given twice");
    Some(value)
}

#[test]
fn a_page_from_an_allowed_origin_passes_the_preflight_and_reads_the_answer() {
    let page = "http://pages.example:8080";
    let router =
        router_of(server().allow_origins("http://other.example, http://pages.example:8080/"));

    let preflight = block_on_ready(router.handle(from_page("OPTIONS", page, "server/discover")));
    assert_eq!(preflight.status, 204);
    assert_eq!(
        header(&preflight, "access-control-allow-origin"),
        Some(page)
    );
    let allowed = header(&preflight, "access-control-allow-headers").unwrap();
    for name in [
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "content-type",
    ] {
        assert!(allowed.contains(name), "{name} not in {allowed}");
    }

    let answer = block_on_ready(router.handle(from_page("POST", page, "server/discover")));
    assert_eq!(answer.status, 200, "{}", answer.json_body());
    assert_eq!(header(&answer, "access-control-allow-origin"), Some(page));
    let info = &answer.json_body()["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "router-test", "{}", answer.json_body());
}

#[test]
fn other_origins_get_no_preflight_and_stay_forbidden() {
    let router = router_of(server().allow_origin("http://pages.example:8080"));
    for origin in ["http://pages.example:8081", "http://evil.example", "null"] {
        let preflight =
            block_on_ready(router.handle(from_page("OPTIONS", origin, "server/discover")));
        assert_eq!(preflight.status, 405, "{origin}");
        assert_eq!(header(&preflight, "access-control-allow-origin"), None);
        let answer = block_on_ready(router.handle(from_page("POST", origin, "server/discover")));
        assert_eq!(answer.status, 403, "{origin}");
        assert_eq!(header(&answer, "access-control-allow-origin"), None);
    }
}

/// A server checking tokens with a validator of its own: a token `name.scope~scope` is `name`
/// of `https://issuer.example` with those scopes. `purge` needs the scope `admin`.
fn scoped_server() -> McpServer {
    use durable_mcp::auth::{OAuth, Principal, TokenRefusal};
    let purge = task("purge", |cx, _| {
        Box::pin(async move {
            cx.sleep("nap", "1h").await?;
            Ok(reply(format!(
                "purged by {}",
                cx.principal().unwrap_or("nobody")
            )))
        })
    });
    let wait = task("wait", |cx, _| {
        Box::pin(async move {
            cx.sleep("nap", "1h").await?;
            Ok(reply("woke"))
        })
    });
    let oauth = OAuth::new("https://mcp.example/mcp", ["https://issuer.example"])
        .unwrap()
        .validator(|token: String| async move {
            let (name, scopes) = token
                .split_once('.')
                .ok_or_else(|| TokenRefusal::Invalid("not name.scopes".to_owned()))?;
            Ok(Principal::new(
                "https://issuer.example",
                name,
                scopes.split('~').filter(|scope| !scope.is_empty()),
            ))
        });
    McpServer::new("scoped", "0.0.0")
        .task(TaskTool::new(purge, json!({ "type": "object" })).scopes(["admin"]))
        .task(TaskTool::new(wait, json!({ "type": "object" })))
        .oauth(oauth)
}

#[test]
fn a_scoped_tool_needs_its_scopes_on_calls_and_on_every_request_about_its_tasks() {
    let server = scoped_server();
    let mut harness = Harness::new(&server);
    let router = Router::new(server, harness.shared_engine());
    let call = |token: Option<&str>, tool: &str| {
        send(
            &router,
            token,
            "tools/call",
            json!({ "name": tool, "arguments": {} }),
        )
    };

    // No token: the challenge names what the call needs.
    let refused = call(None, "purge");
    assert_eq!(refused.status, 401);
    let challenge = header(&refused, "www-authenticate").expect("a challenge");
    assert!(challenge.contains("scope=\"admin\""), "{challenge}");
    assert!(
        challenge.contains(
            "resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );

    // A token without the scope calls what needs none, and is refused the rest with 403.
    assert_eq!(call(Some("alice."), "wait").status, 200);
    let refused = call(Some("alice."), "purge");
    assert_eq!(refused.status, 403, "{}", refused.json_body());
    let challenge = header(&refused, "www-authenticate").expect("a challenge");
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"admin\""), "{challenge}");

    let created = call(Some("alice.admin"), "purge");
    let id = created.json_body()["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    harness.run_until_idle();
    for (method, params) in [
        ("tasks/get", json!({ "taskId": id })),
        ("tasks/cancel", json!({ "taskId": id })),
        (
            "tasks/update",
            json!({ "taskId": id, "inputResponses": {} }),
        ),
    ] {
        let refused = send(&router, Some("alice."), method, params.clone());
        assert_eq!(refused.status, 403, "{method}: {}", refused.json_body());
        // Another user with the scope is told the task does not exist.
        let foreign = send(&router, Some("bob.admin"), method, params);
        assert_eq!(error_code(&foreign), -32602, "{method}");
    }
    let got = send(
        &router,
        Some("alice.admin"),
        "tasks/get",
        json!({ "taskId": id }),
    );
    assert_eq!(
        got.json_body()["result"]["status"],
        "working",
        "nothing was cancelled"
    );

    // The body sees who started it: the issuer and subject, never the token.
    harness.advance("1h");
    harness.run_until_idle();
    let done = send(
        &router,
        Some("alice.admin~other"),
        "tasks/get",
        json!({ "taskId": id }),
    );
    assert_eq!(
        done.json_body()["result"]["result"]["content"][0]["text"],
        "purged by https://issuer.example#alice"
    );
}

#[test]
fn the_metadata_lists_every_scope_and_is_served_only_at_its_paths() {
    let server = scoped_server();
    let harness = Harness::new(&server);
    let router = Router::new(server, harness.shared_engine());
    let metadata = router
        .well_known("GET", "/.well-known/oauth-protected-resource/mcp")
        .expect("the metadata");
    assert_eq!(
        metadata.json_body(),
        json!({
            "resource": "https://mcp.example/mcp",
            "authorization_servers": ["https://issuer.example"],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["admin"],
        })
    );
    assert!(
        router
            .well_known("GET", "/.well-known/oauth-protected-resource")
            .is_some()
    );
    assert!(
        router
            .well_known("GET", "/.well-known/oauth-protected-resource/other")
            .is_none()
    );
    assert_eq!(
        router
            .well_known("POST", "/.well-known/oauth-protected-resource")
            .unwrap()
            .status,
        405
    );
}

/// A 2025-era request (with a session, when given) carrying `token`.
fn send_2025(
    router: &Router,
    token: &str,
    session: Option<&str>,
    method: &str,
    params: Value,
) -> HttpResponse {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("authorization".to_owned(), format!("Bearer {token}")),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id".to_owned(), session.to_owned()));
        headers.push(("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()));
    }
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    block_on_ready(router.handle(HttpRequest {
        method: "POST".to_owned(),
        headers: Headers::new(headers),
        body: body.to_string().into_bytes(),
    }))
}

#[test]
fn the_2025_task_list_leaves_out_tasks_whose_tool_needs_scopes_the_token_lacks() {
    let server = scoped_server();
    let mut harness = Harness::new(&server);
    let router = Router::new(server, harness.shared_engine());
    let initialized = send_2025(
        &router,
        "alice.admin",
        None,
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "test", "version": "1" } }),
    );
    let session = header(&initialized, "mcp-session-id")
        .expect("a session")
        .to_owned();
    let mut created = Vec::new();
    for tool in ["purge", "wait"] {
        let params = json!({ "name": tool, "arguments": {}, "task": {} });
        let answer =
            send_2025(&router, "alice.admin", Some(&session), "tools/call", params).json_body();
        created.push(
            answer["result"]["task"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("{answer}"))
                .to_owned(),
        );
    }
    harness.run_until_idle();
    let listed = |token: &str| -> Vec<String> {
        let answer = send_2025(&router, token, Some(&session), "tasks/list", json!({})).json_body();
        let tasks = answer["result"]["tasks"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"));
        let mut ids: Vec<String> = tasks
            .iter()
            .map(|task| task["taskId"].as_str().unwrap().to_owned())
            .collect();
        // Tasks created in one millisecond are listed by id.
        ids.sort();
        ids
    };
    let mut all = created.clone();
    all.sort();
    assert_eq!(listed("alice.admin"), all);
    assert_eq!(
        listed("alice."),
        [created[1].clone()],
        "purge's task needs admin"
    );
    assert!(
        listed("bob.admin").is_empty(),
        "another user's tasks are not listed"
    );
}
