//! Fuzz target: the router's request parsing, in process over a harness engine serving the
//! conformance fixture server (every kind of tool, task tool, prompt, resource and the
//! completion hook), in both eras.
//!
//! Each case is one HTTP request: arbitrary bytes, arbitrary JSON, or (mostly) a JSON-RPC
//! request built from the methods of both eras and junk, with ids of every JSON type, params
//! with random `_meta` envelopes and protocol versions, and the MCP headers either consistent
//! with the body, random or absent; a 2025 case may carry the session of a real `initialize`.
//! Before it, the store holds three tasks (sleeping, waiting for input, failed) that the
//! generated `taskId`s and answer ids name. Invariants:
//!
//! - `Router::handle` does not panic, and its future finishes at once (nothing in the ladder
//!   waits: the harness's clock only moves when a test moves it);
//! - the answer is 202 without a body, 405 for a method other than POST, a preflight answer
//!   for `OPTIONS`, or one JSON-RPC response whose error code is a documented one with the HTTP
//!   status the ladder gives it (docs/how-it-works.md, "The MCP endpoint"), echoing the
//!   request's id;
//! - a refused request changes no task and creates none; a request that is not a well-formed
//!   state-changing call (`tools/call`, `tasks/update`, `tasks/cancel`, an answer to a task's
//!   question) changes nothing; one creates at most one task.
//!
//! A streamed answer (an inline run, a plain tool's notifications) is read only as far as it
//! is ready: its next frames wait on the virtual clock, which never moves here, so the test
//! does not wait for them (an inline run is followed until its deadline otherwise).
//!
//! The files under `tests/fuzz-corpus/router/` are requests worth keeping (each a JSON object
//! `{"method", "headers", "body"}`); `the_corpus_holds` replays them under the same invariants.

mod common;
mod fuzzing;

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use durable_mcp::McpServer;
use durable_mcp::http::Router;
use durable_mcp::http::{Headers, HttpRequest, HttpResponse};
use durable_mcp::store::LoadScope;
use durable_mcp::testing::Harness;
use durable_mcp_tests::mcp::routed_name;
use futures_util::Stream;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value, json};

const MODERN: &str = "2026-07-28";
const LEGACY: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Every method either era serves, and some neither does.
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "tasks/result",
    "tasks/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "sampling/createMessage",
    "elicitation/create",
    "",
    "TOOLS/LIST",
    "tools/list ",
    "rpc.discover",
];

const RESOURCES: &[&str] = &[
    "test://static-text",
    "test://static-binary",
    "test://template/42/data",
    "test://template//data",
    "test://nothing",
    "",
];

/// The world one case runs in: the fixture server over a fresh harness holding three tasks.
struct World {
    harness: Harness,
    router: Router,
    /// Ids of the tasks made before the request.
    tasks: Vec<String>,
}

thread_local! {
    static SERVER: Rc<McpServer> = Rc::new(conformance_server::server());
}

fn world() -> World {
    let server = SERVER.with(Rc::clone);
    let mut harness = Harness::new(&*server);
    let router = Router::new(Rc::clone(&server), harness.shared_engine());
    let sleeping = harness.create("slow_compute", json!({ "seconds": 60, "label": "fuzz" }));
    let asking = harness.create("confirm_delete", json!({ "filename": "fuzz.txt" }));
    let failed = harness.create("protocol_error_job", json!({}));
    harness.run_until_idle();
    World {
        harness,
        router,
        tasks: vec![sleeping, asking, failed],
    }
}

/// Every task's stored state, to compare before and after a request.
fn state(harness: &Harness) -> Vec<(String, String)> {
    let store = &harness.engine().host().store;
    let ids = store.task_ids().expect("task ids");
    ids.into_iter()
        .map(|id| {
            let state = store.load(&id, LoadScope::Full).expect("load");
            (id, format!("{state:?}"))
        })
        .collect()
}

/// Polls `future` without waiting: it must finish at once.
fn poll_now<T>(future: impl Future<Output = T>) -> Option<T> {
    let mut context = Context::from_waker(Waker::noop());
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut context) {
        Poll::Ready(value) => Some(value),
        Poll::Pending => None,
    }
}

/// The frames of a stream that are ready now, and whether it ended.
fn ready_frames(stream: &mut (impl Stream<Item = Vec<u8>> + Unpin)) -> (Vec<u8>, bool) {
    let mut context = Context::from_waker(Waker::noop());
    let mut bytes = Vec::new();
    for _ in 0..256 {
        match Pin::new(&mut *stream).poll_next(&mut context) {
            Poll::Ready(Some(frame)) => bytes.extend(frame),
            Poll::Ready(None) => return (bytes, true),
            Poll::Pending => return (bytes, false),
        }
    }
    (bytes, false)
}

/// What a generated request is, as the invariants need to know it.
#[derive(Clone)]
struct Request {
    http_method: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Whether to replace the session placeholder by the session of a real `initialize`.
    initialize_first: Option<Value>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("http_method", &self.http_method)
            .field("headers", &self.headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .field("initialize_first", &self.initialize_first)
            .finish()
    }
}

const SESSION_PLACEHOLDER: &str = "<session of initialize>";
const TASK_PLACEHOLDER: [&str; 3] = ["<task 0>", "<task 1>", "<task 2>"];

/// The documented error codes.
const CODES: &[i64] = &[
    -32700, -32600, -32601, -32602, -32603, -32001, -32020, -32021, -32022,
];

/// Checks one request against the invariants.
fn check(request: Request) -> Result<(), TestCaseError> {
    let world = world();
    let fill = |text: &str| {
        let mut text = text.to_owned();
        for (placeholder, id) in TASK_PLACEHOLDER.iter().zip(&world.tasks) {
            text = text.replace(placeholder, id);
        }
        text
    };
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), fill(value)))
        .collect();
    if let Some(capabilities) = &request.initialize_first {
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": { "name": "fuzz", "version": "0" } } });
        let response = poll_now(world.router.handle(HttpRequest {
            method: "POST".to_owned(),
            headers: Headers::new([("content-type", "application/json")]),
            body: init.to_string().into_bytes(),
        }))
        .expect("initialize answers at once");
        prop_assert_eq!(response.status, 200, "{}", response.json_body());
        let session = response
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id"))
            .map(|(_, value)| value.clone())
            .expect("initialize answers a session");
        for (_, value) in &mut headers {
            *value = value.replace(SESSION_PLACEHOLDER, &session);
        }
    }
    let body = match std::str::from_utf8(&request.body) {
        Ok(text) => fill(text).into_bytes(),
        Err(_) => request.body.clone(),
    };
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let before = state(&world.harness);
    let http = HttpRequest {
        method: request.http_method.clone(),
        headers: Headers::new(headers.clone()),
        body: body.clone(),
    };
    let answered = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let response = poll_now(world.router.handle(http))?;
        let HttpResponse {
            status,
            headers,
            body,
            events,
        } = response;
        Some(match events {
            None => (status, headers, body, None),
            Some(mut events) => {
                let (bytes, ended) = ready_frames(&mut events);
                (status, headers, bytes, Some(ended))
            }
        })
    }));
    let (status, response_headers, response_body, streamed) = match answered {
        Ok(Some(answer)) => answer,
        Ok(None) => return Err(TestCaseError::fail("Router::handle did not finish at once")),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            return Err(TestCaseError::fail(format!(
                "the router panicked: {message}"
            )));
        }
    };
    let after = state(&world.harness);
    let request_object = parsed.as_ref().and_then(Value::as_object);
    let method = request_object
        .and_then(|o| o.get("method"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let error_code = check_answer(
        &request,
        &headers,
        parsed.as_ref(),
        status,
        &response_headers,
        &response_body,
        streamed,
    )?;

    // The task set: a refusal writes nothing; only a state-changing call changes anything.
    let created = after
        .iter()
        .filter(|(id, _)| !before.iter().any(|(old, _)| old == id))
        .count();
    let changed = before != after;
    let is_answer = request_object
        .is_some_and(|o| !o.contains_key("method") && o.get("id").is_some_and(Value::is_string));
    let changing = matches!(method, "tools/call" | "tasks/update" | "tasks/cancel") || is_answer;
    if changed {
        prop_assert!(
            changing,
            "{method:?} (not a state-changing call) changed the tasks"
        );
        prop_assert!(
            error_code.is_none() || streamed.is_some(),
            "a refused request ({error_code:?}) changed the tasks"
        );
        prop_assert!(created <= 1, "one request created {created} tasks");
        prop_assert!(
            created == 0 || method == "tools/call",
            "{method:?} created a task"
        );
        prop_assert!(
            before
                .iter()
                .all(|(id, _)| after.iter().any(|(new, _)| new == id)),
            "a task vanished"
        );
    }
    Ok(())
}

/// The answer's shape; returns its error code if it is an error.
fn check_answer(
    request: &Request,
    headers: &[(String, String)],
    parsed: Option<&Value>,
    status: u16,
    response_headers: &[(&'static str, String)],
    body: &[u8],
    streamed: Option<bool>,
) -> Result<Option<i64>, TestCaseError> {
    if request.http_method == "OPTIONS" && status != 405 {
        // A CORS preflight the policy answers.
        prop_assert!((200..300).contains(&status), "preflight status {status}");
        return Ok(None);
    }
    if request.http_method != "POST" {
        prop_assert_eq!(status, 405);
        prop_assert!(
            response_headers
                .iter()
                .any(|(n, v)| *n == "allow" && v == "POST")
        );
        return Ok(None);
    }
    if status == 202 {
        prop_assert!(body.is_empty() && streamed.is_none(), "a 202 with a body");
        // Only a message without an id (or a response of the client) is acknowledged so.
        let object = parsed.and_then(Value::as_object);
        prop_assert!(
            object.is_some_and(|o| !o.contains_key("method") || !o.contains_key("id")),
            "a request with an id answered 202"
        );
        return Ok(None);
    }
    let message = match streamed {
        None => serde_json::from_slice::<Value>(body)
            .map_err(|e| TestCaseError::fail(format!("status {status}, body not JSON: {e}")))?,
        Some(ended) => {
            prop_assert_eq!(status, 200, "a stream travels with 200");
            let messages = durable_mcp::__internals::sse::parse_messages(body);
            let Some(last) = messages.last().cloned() else {
                return Ok(None);
            };
            if !ended {
                // The response comes last; what is here so far are notifications/requests.
                return Ok(None);
            }
            last
        }
    };
    prop_assert_eq!(&message["jsonrpc"], "2.0", "{}", message);
    let request_id = parsed.and_then(|p| p.get("id"));
    if let Some(id) = message.get("id").filter(|id| !id.is_null()) {
        prop_assert_eq!(Some(id), request_id, "the answer echoes another id");
    }
    let Some(error) = message.get("error") else {
        prop_assert!(message.get("result").is_some(), "neither result nor error");
        prop_assert_eq!(status, 200);
        return Ok(None);
    };
    let code = error["code"].as_i64();
    prop_assert!(
        code.is_some_and(|c| CODES.contains(&c)),
        "undocumented code {:?}",
        error
    );
    let code = code.unwrap_or_default();
    prop_assert!(error["message"].is_string(), "an error without message");
    if streamed.is_some() {
        return Ok(Some(code));
    }
    let legacy = is_legacy(headers, parsed);
    let allowed: &[u16] = match code {
        -32700 => &[400],
        // 403: a refused Host or Origin; 404: an unknown 2025 session.
        -32600 if legacy => &[400, 403, 404],
        -32600 => &[400, 403],
        -32001 => &[401],
        _ if legacy => &[200],
        -32601 => &[404],
        -32602 => &[200, 400],
        -32022..=-32020 => &[400],
        -32603 => &[500],
        _ => &[],
    };
    prop_assert!(
        allowed.contains(&status),
        "code {code} with status {status} (legacy: {legacy}): {}",
        message
    );
    Ok(Some(code))
}

/// The lane rule of docs/how-it-works.md ("Two eras on one endpoint"), as a client reads it.
fn is_legacy(headers: &[(String, String)], parsed: Option<&Value>) -> bool {
    let Some(object) = parsed.and_then(Value::as_object) else {
        return false;
    };
    let envelope = object
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .is_some();
    let versions: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("mcp-protocol-version"))
        .map(|(_, v)| v.as_str())
        .collect();
    let header_legacy =
        versions.is_empty() || (versions.len() == 1 && LEGACY.contains(&versions[0].trim()));
    !envelope && object.get("method") != Some(&json!("server/discover")) && header_legacy
}

// ---------------------------------------------------------------------------------------
// Strategies.

fn junk_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z/_\\-]{0,12}",
        any::<String>(),
        Just("=?base64?dGVzdA==?=".to_owned()),
        Just("=?base64?!!?=".to_owned()),
        "[ -~]{0,40}",
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        junk_string().prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(junk_string(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn id() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => any::<i64>().prop_map(|i| Some(json!(i))),
        2 => junk_string().prop_map(|s| Some(json!(s))),
        1 => Just(None),
        1 => json_leaf().prop_map(Some),
        1 => json_value().prop_map(Some),
        1 => prop::sample::select(&TASK_PLACEHOLDER[..])
            .prop_flat_map(|t| prop::sample::select(&["confirm", "x", ""][..])
                .prop_map(move |key| Some(json!(format!("task/{t}/{key}"))))),
        1 => junk_string().prop_map(|s| Some(json!(format!("call/{s}")))),
    ]
}

fn version() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(MODERN.to_owned()),
        2 => prop::sample::select(&LEGACY[..]).prop_map(str::to_owned),
        1 => junk_string(),
    ]
}

/// A `_meta` envelope: none, a valid one, or one with mutated fields.
fn meta() -> impl Strategy<Value = Option<Value>> {
    let capabilities = prop_oneof![
        3 => Just(json!({ "extensions": { TASKS: {} } })),
        2 => Just(json!({ "extensions": {} })),
        1 => Just(json!({})),
        1 => json_value(),
    ];
    let extra = prop_oneof![
        Just(Map::new()),
        json_value().prop_map(|v| [("progressToken".to_owned(), v)].into_iter().collect()),
        prop::sample::select(&["debug", "info", "error", "loud", ""][..]).prop_map(|level| {
            [(
                "io.modelcontextprotocol/logLevel".to_owned(),
                Value::from(level),
            )]
            .into_iter()
            .collect()
        }),
    ];
    prop_oneof![
        2 => Just(None),
        5 => (prop::option::weighted(0.9, version()), prop::option::weighted(0.9, capabilities), extra)
            .prop_map(|(version, capabilities, extra)| {
                let mut meta = extra;
                if let Some(version) = version {
                    meta.insert("io.modelcontextprotocol/protocolVersion".into(), version.into());
                }
                if let Some(capabilities) = capabilities {
                    meta.insert("io.modelcontextprotocol/clientCapabilities".into(), capabilities);
                }
                Some(Value::Object(meta))
            }),
        1 => json_value().prop_map(Some),
    ]
}

/// A name: a registered tool or prompt, or junk.
fn name() -> impl Strategy<Value = Value> {
    let names: Vec<String> = SERVER.with(|server| {
        let server: &McpServer = server;
        server
            .tool_names()
            .into_iter()
            .chain(server.prompt_names())
            .map(str::to_owned)
            .collect()
    });
    prop_oneof![
        6 => prop::sample::select(names).prop_map(Value::from),
        1 => junk_string().prop_map(Value::from),
        1 => json_leaf(),
    ]
}

fn task_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::sample::select(&TASK_PLACEHOLDER[..]).prop_map(Value::from),
        1 => Just(json!("f".repeat(32))),
        1 => json_leaf(),
    ]
}

/// The params of any method: the fields some method reads, each present or not, with
/// plausible or random values.
fn params() -> impl Strategy<Value = Option<Value>> {
    let arguments = prop_oneof![
        Just(json!({})),
        Just(json!({ "seconds": 0, "label": "x" })),
        Just(json!({ "name": "fuzz" })),
        json_value(),
    ];
    let input_responses = prop_oneof![
        Just(json!({ "confirm": { "action": "accept", "content": { "confirm": true } } })),
        Just(json!({ "confirm": { "action": "decline" } })),
        json_value(),
    ];
    let fields = (
        meta(),
        prop::option::of(name()),
        prop::option::weighted(0.6, arguments),
        prop::option::of(prop_oneof![
            prop::sample::select(RESOURCES).prop_map(Value::from),
            json_leaf()
        ]),
        prop::option::of(task_id()),
        prop::option::weighted(0.2, input_responses),
        prop::option::weighted(0.1, json_leaf()),
        prop::option::weighted(0.2, json_value()),
        prop::option::weighted(0.2, json_value()),
        prop::option::weighted(0.1, json_value()),
    );
    let object = fields.prop_map(
        |(meta, name, arguments, uri, task_id, responses, state, task, reference, other)| {
            let mut params = Map::new();
            let mut put = |key: &str, value: Option<Value>| {
                if let Some(value) = value {
                    params.insert(key.to_owned(), value);
                }
            };
            put("_meta", meta);
            put("name", name);
            put("arguments", arguments);
            put("uri", uri);
            put("taskId", task_id);
            put("inputResponses", responses);
            put("requestState", state);
            put("task", task);
            put("ref", reference.clone());
            put("argument", reference);
            put("cursor", other.clone());
            put("protocolVersion", other.clone());
            put("capabilities", other);
            Some(Value::Object(params))
        },
    );
    prop_oneof![
        8 => object,
        1 => Just(None),
        1 => json_leaf().prop_map(Some),
    ]
}

/// How a header relates to the body.
#[derive(Clone, Copy, Debug)]
enum Header {
    Absent,
    Consistent,
    Random,
}

fn header() -> impl Strategy<Value = Header> {
    prop_oneof![
        3 => Just(Header::Consistent),
        2 => Just(Header::Absent),
        1 => Just(Header::Random),
    ]
}

/// A JSON-RPC request built from mutated fields, with its headers.
fn structured() -> impl Strategy<Value = Request> {
    let method = prop_oneof![
        8 => prop::sample::select(METHODS).prop_map(|m| Some(Value::from(m))),
        1 => Just(None),
        1 => json_leaf().prop_map(Some),
    ];
    let jsonrpc = prop_oneof![
        12 => Just(Some(json!("2.0"))),
        1 => Just(None),
        1 => json_leaf().prop_map(Some),
    ];
    let answer = prop::option::weighted(
        0.05,
        prop_oneof![
            json_value().prop_map(|v| ("result", v)),
            json_value().prop_map(|v| ("error", v)),
        ],
    );
    let headers = (
        header(),
        header(),
        header(),
        junk_string(),
        prop_oneof![
            3 => Just(None),
            1 => Just(Some(SESSION_PLACEHOLDER.to_owned())),
            1 => junk_string().prop_map(Some),
            1 => junk_string().prop_map(|s| Some(format!("dm1.{s}"))),
        ],
        prop_oneof![
            6 => Just(None),
            1 => prop::sample::select(
                &["http://localhost:3000", "https://evil.example", "null", ""][..]
            )
            .prop_map(|o| Some(o.to_owned())),
        ],
        prop_oneof![
            6 => Just(None),
            1 => prop::sample::select(
                &["localhost", "127.0.0.1:8787", "evil.example", "[::1]", ""][..]
            )
            .prop_map(|h| Some(h.to_owned())),
        ],
    );
    let capabilities = prop_oneof![
        Just(json!({})),
        Just(json!({ "elicitation": {}, "sampling": {}, "tasks": {} })),
        json_value(),
    ];
    (
        jsonrpc,
        id(),
        method,
        params(),
        answer,
        headers,
        prop::option::weighted(0.15, capabilities),
    )
        .prop_map(
            |(jsonrpc, id, method, params, answer, headers, initialize_first)| {
                let mut body = Map::new();
                if let Some(jsonrpc) = jsonrpc {
                    body.insert("jsonrpc".into(), jsonrpc);
                }
                if let Some(id) = id {
                    body.insert("id".into(), id);
                }
                if let Some((key, value)) = answer {
                    body.insert(key.into(), value);
                } else if let Some(method) = &method {
                    body.insert("method".into(), method.clone());
                }
                if let Some(params) = &params {
                    body.insert("params".into(), params.clone());
                }
                let (version, method_header, name_header, junk, session, origin, host) = headers;
                let method_text = method.as_ref().and_then(Value::as_str).unwrap_or_default();
                let params = params.unwrap_or_default();
                let envelope_version = params["_meta"]["io.modelcontextprotocol/protocolVersion"]
                    .as_str()
                    .map(str::to_owned);
                let mut pairs = vec![("Content-Type".to_owned(), "application/json".to_owned())];
                let mut add = |name: &str, mode: Header, consistent: Option<String>| match mode {
                    Header::Absent => {}
                    Header::Consistent => {
                        if let Some(value) = consistent {
                            pairs.push((name.to_owned(), value));
                        }
                    }
                    Header::Random => pairs.push((name.to_owned(), junk.clone())),
                };
                add("MCP-Protocol-Version", version, envelope_version);
                add("Mcp-Method", method_header, Some(method_text.to_owned()));
                add("Mcp-Name", name_header, routed_name(method_text, &params));
                if let Some(session) = session {
                    pairs.push(("Mcp-Session-Id".to_owned(), session));
                }
                if let Some(origin) = origin {
                    pairs.push(("Origin".to_owned(), origin));
                }
                if let Some(host) = host {
                    pairs.push(("Host".to_owned(), host));
                }
                Request {
                    http_method: "POST".to_owned(),
                    headers: pairs,
                    body: Value::Object(body).to_string().into_bytes(),
                    initialize_first,
                }
            },
        )
}

fn request() -> impl Strategy<Value = Request> {
    let raw = |body: Vec<u8>| Request {
        http_method: "POST".to_owned(),
        headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
        body,
        initialize_first: None,
    };
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(raw),
        1 => json_value().prop_map(move |v| raw(v.to_string().into_bytes())),
        1 => (prop::sample::select(&["GET", "DELETE", "OPTIONS", "PUT", "post"][..]), structured())
            .prop_map(|(method, mut request)| {
                request.http_method = method.to_owned();
                request
            }),
        14 => structured(),
    ]
}

#[test]
fn any_request_is_answered_by_the_ladder_and_changes_no_task_unless_it_should() {
    fuzzing::on_a_large_stack(|| fuzzing::run("router", file!(), 1500, request(), check));
}

/// The committed corpus: each file a request `{"method", "headers", "body"}`, `body` a JSON
/// value sent as its text (or a string sent as is).
#[test]
fn the_corpus_holds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz-corpus/router");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the corpus directory")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the corpus is empty");
    for path in files {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
        let body = match &case["body"] {
            Value::String(text) => text.clone().into_bytes(),
            other => other.to_string().into_bytes(),
        };
        let headers = case["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let request = Request {
            http_method: case["method"].as_str().unwrap_or("POST").to_owned(),
            headers,
            body,
            initialize_first: case.get("initializeFirst").cloned(),
        };
        if let Err(failure) = check(request) {
            panic!("{}: {failure}", path.display());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Defects the fuzzer found, each kept as a plain test.

fn post(router: &Router, headers: &[(&str, &str)], body: &str) -> HttpResponse {
    common::block_on_ready(router.handle(HttpRequest {
        method: "POST".to_owned(),
        headers: Headers::new(headers.iter().copied()),
        body: body.as_bytes().to_vec(),
    }))
}

/// `params` that is not an object was refused before the era was known, with the 2026
/// envelope error at HTTP 400: a 2025 client (which reads errors only from a 200, and has no
/// envelope) got a 4xx telling it about `_meta`. It is now -32602 at 200 in the 2025 lane, and
/// still the envelope error at 400 in the 2026 lane.
#[test]
fn params_that_are_not_an_object_are_refused_as_the_era_of_the_request_refuses() {
    let world = world();
    for params in ["null", "[1]", "\"x\"", "3"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{params}}}"#);
        let response = post(&world.router, &[], &body);
        assert_eq!(response.status, 200, "{params}");
        let error = &response.json_body()["error"];
        assert_eq!(error["code"], -32602);
        assert!(
            !error["message"].as_str().unwrap().contains("_meta"),
            "{error}"
        );

        let body = format!(r#"{{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{params}}}"#);
        let response = post(&world.router, &[("MCP-Protocol-Version", MODERN)], &body);
        assert_eq!(response.status, 400, "{params}");
        let error = &response.json_body()["error"];
        assert_eq!(error["code"], -32602);
        assert!(
            error["message"].as_str().unwrap().contains("_meta"),
            "{error}"
        );
    }
}
