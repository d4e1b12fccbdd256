//! The 2025 section of the black-box suite: the lane a 2025-era client reaches (revisions
//! 2025-03-26 to 2025-11-25): `initialize` and its session, the methods of that era, the
//! 2025-11-25 experimental tasks (`params.task`, `tasks/get`, `tasks/result`, `tasks/list`,
//! `tasks/cancel`), task tools run inline on an event stream, and bad input. Every message is
//! validated against the 2025-11-25 schema.
//!
//! Like the rest of the suite it runs against a fresh `conformance-server`, or against the
//! endpoint at `DURABLE_MCP_TEST_URL` (the Worker), where every test shares one server: each
//! test keeps to its own sessions and tasks.

use std::collections::BTreeSet;

use durable_mcp_tests::http::Response;
use durable_mcp_tests::wait;
use serde_json::{Value, json};

use super::client_2025::{
    EventReader, RELATED_TASK, Session2025, V2025, assert_priming, initialize, initialize_body,
    is_event_stream, parse_events, single_message,
};
use super::{Spec, Target, assert_forecast, assert_forecast_listed, assert_result, assert_valid};

/// The fields 2026-07-28 added to results, which a 2025 client does not know.
const MODERN_FIELDS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// The task tools of the fixture server that these tests call.
const TASK_TOOLS: [&str; 5] = [
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "test_tool_with_progress",
];

/// The HTTP status, the JSON-RPC error code and the body of an error answer, validated as a
/// 2025 error response.
fn error_of(response: &Response) -> (u16, i64, Value) {
    let body = single_message(response);
    assert_valid(Spec::V2025, "JSONRPCErrorResponse", &body);
    let code = body["error"]["code"].as_i64().expect("error code");
    (response.status, code, body)
}

fn assert_no_modern_fields(result: &Value) {
    for field in MODERN_FIELDS {
        assert!(
            result.get(field).is_none(),
            "a 2025 result carries {field}: {result}"
        );
    }
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"))
}

/// Reads `reader` up to the server's next request, asserting every message before it is not
/// the final answer.
fn next_request(reader: &mut EventReader, method: &str) -> Value {
    loop {
        let message = reader
            .next_message()
            .unwrap_or_else(|| panic!("the stream ended before a {method} request"));
        if message.get("method").is_some() && message.get("id").is_some() {
            assert_eq!(message["method"], method, "{message}");
            return message;
        }
        assert!(
            message.get("method").is_some(),
            "the answer came before any {method} request: {message}"
        );
    }
}

/// Reads `reader` to its end and returns the messages, the last being the answer to `id`.
fn read_to_answer(reader: &mut EventReader, id: &Value) -> Vec<Value> {
    let messages = reader.rest();
    let last = messages
        .last()
        .unwrap_or_else(|| panic!("the stream ended without an answer"));
    assert_eq!(&last["id"], id, "the stream's last message: {last}");
    assert!(last.get("method").is_none(), "{last}");
    messages
}

// ---- the handshake ----

#[test]
fn initialize_negotiates_the_revision_and_offers_tasks_only_at_2025_11_25() {
    let target = Target::start();
    let mut issued = BTreeSet::new();
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        // A revision the server does not know: it offers its newest.
        ("2024-01-01", "2025-11-25"),
    ] {
        let response = initialize(&target.client, asked, json!({}));
        assert_eq!(response.status, 200, "{asked}");
        let answer = single_message(&response);
        assert_result(Spec::V2025, "InitializeResult", &answer);
        assert_eq!(answer["id"], 0);
        let result = &answer["result"];
        assert_eq!(result["protocolVersion"], answered, "{asked}: {result}");
        assert_no_modern_fields(result);
        assert_eq!(result["serverInfo"]["name"], "durable-mcp-conformance");
        assert!(result["serverInfo"]["version"].is_string(), "{result}");
        let capabilities = &result["capabilities"];
        assert_eq!(capabilities["tools"], json!({}), "{asked}");
        for offered in ["resources", "prompts", "completions", "logging"] {
            assert!(capabilities.get(offered).is_some(), "{asked}: no {offered}");
        }
        if answered == "2025-11-25" {
            assert_eq!(
                capabilities["tasks"],
                json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
                "{asked}"
            );
        } else {
            assert!(
                capabilities.get("tasks").is_none(),
                "{asked}: tasks offered at {answered}: {capabilities}"
            );
        }
        assert!(
            capabilities.get("extensions").is_none(),
            "{asked}: the 2026 extension capability leaked: {capabilities}"
        );
        let session = response
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("{asked}: no Mcp-Session-Id"));
        assert!(
            !session.is_empty() && session.bytes().all(|byte| (0x21..=0x7e).contains(&byte)),
            "{asked}: the session id is not visible ASCII: {session:?}"
        );
        assert!(
            issued.insert(session.to_owned()),
            "a session id was issued twice"
        );
    }
}

#[test]
fn initialized_is_accepted_and_ping_and_set_level_answer_empty_objects() {
    let target = Target::start();
    // `open` asserts the 202 to notifications/initialized; check its body here too.
    let session = Session2025::open(&target, json!({}));
    let response =
        session.post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    assert_eq!(response.status, 202);
    assert!(response.body.is_empty(), "{:?}", response.body);

    for (method, params) in [
        ("ping", json!({})),
        ("logging/setLevel", json!({ "level": "info" })),
        (
            "resources/subscribe",
            json!({ "uri": "test://static-text" }),
        ),
        (
            "resources/unsubscribe",
            json!({ "uri": "test://static-text" }),
        ),
    ] {
        let answer = session.call(method, params);
        assert_result(Spec::V2025, "EmptyResult", &answer);
        // The conformance suite's ping and logging-set-level want exactly `{}`.
        assert_eq!(answer["result"], json!({}), "{method}");
    }
}

#[test]
fn get_is_405_for_a_2025_client_too() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    // The v1 SDK opens this stream after the 202 to notifications/initialized.
    let headers = [
        ("Accept", "text/event-stream"),
        ("MCP-Protocol-Version", V2025),
        ("Mcp-Session-Id", session.id.as_deref().unwrap()),
    ];
    let response = session.client().raw("GET", &headers, b"");
    assert_eq!(response.status, 405);
    assert_eq!(response.header("allow"), Some("POST"));
}

#[test]
fn a_session_id_the_server_did_not_issue_is_404() {
    let target = Target::start();
    let issued = Session2025::open(&target, json!({}));
    let issued = issued.id.as_deref().unwrap();
    // Another server's id, a forged id with this server's look, and an issued id cut short.
    for foreign in [
        "7d1f0c3e-0000-4000-8000-000000000000",
        "dm1.bm90IGpzb24",
        &issued[..issued.len() - 3],
    ] {
        let session = Session2025::with_session_id(&target, foreign);
        for (method, params) in [
            ("tools/list", json!({})),
            ("ping", json!({})),
            ("tasks/list", json!({})),
            ("tools/call", json!({ "name": "greet", "arguments": {} })),
        ] {
            let response = session.send(method, params);
            assert_eq!(response.status, 404, "{foreign}: {method}");
        }
    }
}

#[test]
fn a_2026_stamped_initialize_is_still_method_not_found() {
    let target = Target::start();
    let params = initialize_body(V2025, json!({}))["params"].clone();
    let (with_envelope, headers) = target.client.build("initialize", params.clone(), false);
    let mut without_envelope = with_envelope.clone();
    without_envelope["params"] = params;
    let only_header: Vec<(String, String)> = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
    ];
    let only_json = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    for (case, body, headers) in [
        ("envelope and headers", &with_envelope, &headers),
        ("2026 header alone", &without_envelope, &only_header),
        ("envelope alone", &with_envelope, &only_json),
    ] {
        let response = target.client.send_built(body, headers);
        assert_eq!(response.status, 404, "{case}: {}", response.json());
        let answer = response.json();
        assert_valid(Spec::Core, "JSONRPCErrorResponse", &answer);
        assert_eq!(answer["error"]["code"], -32601, "{case}");
        assert!(response.header("mcp-session-id").is_none(), "{case}");
    }
}

// ---- the methods of the era ----

#[test]
fn tools_list_shows_task_tools_as_optional_without_2026_fields() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    let answer = session.call("tools/list", json!({}));
    assert_result(Spec::V2025, "ListToolsResult", &answer);
    let result = &answer["result"];
    assert_no_modern_fields(result);
    let tools = result["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed"))
    };
    for name in TASK_TOOLS {
        assert_eq!(
            tool(name)["execution"],
            json!({ "taskSupport": "optional" }),
            "{name}"
        );
    }
    assert!(
        tool("greet")["execution"]["taskSupport"]
            .as_str()
            .unwrap_or("forbidden")
            == "forbidden",
        "a plain tool is no task: {}",
        tool("greet")
    );
    for tool in tools {
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "the conformance suite needs a description: {tool}"
        );
    }
}

#[test]
fn a_plain_tool_answers_a_2025_call_result() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    for (params, expected) in [
        (
            json!({ "name": "greet", "arguments": { "name": "Ada" } }),
            "Hello, Ada!",
        ),
        // The conformance suite sends no `arguments` key.
        (json!({ "name": "greet" }), "Hello, world!"),
    ] {
        let answer = session.call("tools/call", params);
        assert_result(Spec::V2025, "CallToolResult", &answer);
        assert_no_modern_fields(&answer["result"]);
        assert_eq!(text_of(&answer["result"]), expected);
        assert!(answer["result"].get("isError").is_none_or(|e| e == false));
    }
}

#[test]
fn a_tool_with_json_output_answers_structured_content_on_the_2025_lane() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    let listed = session.call("tools/list", json!({}));
    assert_result(Spec::V2025, "ListToolsResult", &listed);
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "forecast")
        .expect("forecast is listed")
        .clone();
    assert_forecast_listed(&tool);
    let answer = session.call(
        "tools/call",
        json!({ "name": "forecast", "arguments": { "city": "Lisbon" } }),
    );
    assert_result(Spec::V2025, "CallToolResult", &answer);
    assert_no_modern_fields(&answer["result"]);
    assert_forecast(&tool, &answer["result"]);

    let refused = session.call("tools/call", json!({ "name": "forecast", "arguments": {} }));
    assert_result(Spec::V2025, "CallToolResult", &refused);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(text_of(&refused["result"]).contains("missing field `city`"));
}

#[test]
fn resources_are_listed_and_read_without_2026_fields() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    let listed = session.call("resources/list", json!({}));
    assert_result(Spec::V2025, "ListResourcesResult", &listed);
    assert_no_modern_fields(&listed["result"]);
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|resource| resource["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"test://static-text"), "{uris:?}");

    let templates = session.call("resources/templates/list", json!({}));
    assert_result(Spec::V2025, "ListResourceTemplatesResult", &templates);
    assert_no_modern_fields(&templates["result"]);

    let read = session.call("resources/read", json!({ "uri": "test://static-text" }));
    assert_result(Spec::V2025, "ReadResourceResult", &read);
    assert_no_modern_fields(&read["result"]);
    assert_eq!(read["result"]["contents"][0]["uri"], "test://static-text");
    assert!(read["result"]["contents"][0]["text"].is_string());

    let from_template = session.call(
        "resources/read",
        json!({ "uri": "test://template/123/data" }),
    );
    assert_result(Spec::V2025, "ReadResourceResult", &from_template);
    assert!(from_template["result"].to_string().contains("123"));

    let (status, code, body) =
        error_of(&session.send("resources/read", json!({ "uri": "test://nothing" })));
    assert_eq!((status, code), (200, -32602), "{body}");
}

#[test]
fn prompts_are_listed_and_expanded_without_2026_fields() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    let listed = session.call("prompts/list", json!({}));
    assert_result(Spec::V2025, "ListPromptsResult", &listed);
    assert_no_modern_fields(&listed["result"]);
    let names: Vec<&str> = listed["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|prompt| prompt["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"test_prompt_with_arguments"), "{names:?}");

    let expanded = session.call(
        "prompts/get",
        json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "a", "arg2": "b" } }),
    );
    assert_result(Spec::V2025, "GetPromptResult", &expanded);
    assert_no_modern_fields(&expanded["result"]);
    assert_eq!(
        expanded["result"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='a', arg2='b'"
    );

    // No `arguments` key, as the conformance suite sends it.
    let simple = session.call("prompts/get", json!({ "name": "test_simple_prompt" }));
    assert_result(Spec::V2025, "GetPromptResult", &simple);
    assert_no_modern_fields(&simple["result"]);

    let (status, code, _) = error_of(&session.send("prompts/get", json!({ "name": "nope" })));
    assert_eq!((status, code), (200, -32602));
}

#[test]
fn completion_suggests_values_on_the_2025_lane() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    let answer = session.call(
        "completion/complete",
        json!({
            "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
            "argument": { "name": "arg1", "value": "par" },
        }),
    );
    assert_result(Spec::V2025, "CompleteResult", &answer);
    assert_no_modern_fields(&answer["result"]);
    assert_eq!(
        answer["result"]["completion"]["values"],
        json!(["paris", "park", "party"])
    );
}

// ---- 2025-11-25 tasks ----

#[test]
fn a_task_call_answers_a_2025_create_task_result() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {} }));
    let answer = session.call(
        "tools/call",
        json!({
            "name": "slow_compute",
            "arguments": { "seconds": 1, "label": "pi" },
            "task": { "ttl": 60_000 },
        }),
    );
    assert_result(Spec::V2025, "CreateTaskResult", &answer);
    let result = &answer["result"];
    assert_no_modern_fields(result);
    assert_eq!(
        result.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["task"],
        "only the task (no 2026 flattened fields): {result}"
    );
    let task = &result["task"];
    assert_eq!(task["status"], "working", "{task}");
    assert!(task["ttl"].is_u64(), "{task}");
    assert_eq!(task["pollInterval"], 200, "{task}");
    for stamp in ["createdAt", "lastUpdatedAt"] {
        let stamp = task[stamp].as_str().unwrap_or_else(|| panic!("{task}"));
        assert!(stamp.contains('T') && stamp.ends_with('Z'), "{stamp}");
    }
    for absent in [
        "ttlMs",
        "pollIntervalMs",
        "resultType",
        "result",
        "inputRequests",
    ] {
        assert!(
            task.get(absent).is_none(),
            "the task carries {absent}: {task}"
        );
    }
    let id = task["taskId"].as_str().unwrap();

    let got = session.call("tasks/get", json!({ "taskId": id }));
    assert_result(Spec::V2025, "GetTaskResult", &got);
    assert_no_modern_fields(&got["result"]);
    assert_eq!(got["result"]["taskId"], id);
    assert_eq!(got["result"]["createdAt"], task["createdAt"]);
    assert!(
        ["working", "completed"].contains(&got["result"]["status"].as_str().unwrap()),
        "{got}"
    );
    for absent in ["result", "error", "inputRequests"] {
        assert!(
            got["result"].get(absent).is_none(),
            "tasks/get carries {absent}: {got}"
        );
    }
    // The task is named by the params; the result SHOULD NOT carry the related-task meta.
    assert!(got["result"]["_meta"].get(RELATED_TASK).is_none(), "{got}");
}

#[test]
fn tasks_result_waits_for_the_outcome_and_names_the_task() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {} }));
    let id = session.create_task("slow_compute", json!({ "seconds": 1, "label": "pi" }));
    assert_eq!(session.get(&id)["status"], "working");

    // Asked while the task works: the answer is the outcome, once there is one.
    let answer = session.call("tasks/result", json!({ "taskId": id }));
    assert_result(Spec::V2025, "GetTaskPayloadResult", &answer);
    assert_valid(Spec::V2025, "CallToolResult", &answer["result"]);
    let result = &answer["result"];
    assert_no_modern_fields(result);
    assert_eq!(text_of(result), "computed pi");
    assert_eq!(result["_meta"][RELATED_TASK], json!({ "taskId": id }));
    assert_eq!(session.get(&id)["status"], "completed");

    // Asked again once done: the same outcome.
    let again = session.call("tasks/result", json!({ "taskId": id }));
    assert_eq!(again["result"], answer["result"]);
}

#[test]
fn input_is_asked_on_the_tasks_result_stream_and_the_answer_completes_the_task() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {}, "elicitation": {} }));
    let id = session.create_task("confirm_delete", json!({ "filename": "a.txt" }));
    let waiting = session.wait_for(&id, "input_required");
    assert_valid(Spec::V2025, "GetTaskResult", &waiting);
    assert!(waiting.get("inputRequests").is_none(), "{waiting}");

    let (request_id, mut stream) = session.stream("tasks/result", json!({ "taskId": id }));
    assert_eq!(stream.status(), 200);
    assert!(
        is_event_stream(stream.header("content-type")),
        "{:?}",
        stream.header("content-type")
    );
    assert_priming(&stream.next_event().expect("a priming event"));
    let asked = next_request(&mut stream, "elicitation/create");
    assert_valid(Spec::V2025, "ElicitRequest", &asked);
    assert_valid(Spec::V2025, "JSONRPCRequest", &asked);
    let asked_id = asked["id"].as_str().expect("a string id");
    let key = asked_id
        .strip_prefix(&format!("task/{id}/"))
        .unwrap_or_else(|| panic!("the id is not task/<taskId>/<key>: {asked_id}"));
    assert!(!key.is_empty(), "{asked_id}");
    assert_eq!(
        asked["params"]["_meta"][RELATED_TASK],
        json!({ "taskId": id })
    );
    assert_eq!(asked["params"]["message"], "Delete a.txt?");

    let answered = session.respond(
        &asked["id"],
        json!({ "action": "accept", "content": { "confirm": true } }),
    );
    assert_eq!(answered.status, 202);
    assert!(answered.body.is_empty());

    let messages = read_to_answer(&mut stream, &request_id);
    let answer = messages.last().unwrap();
    assert_result(Spec::V2025, "GetTaskPayloadResult", answer);
    assert_valid(Spec::V2025, "CallToolResult", &answer["result"]);
    assert_eq!(text_of(&answer["result"]), "deleted=true");
    // The stream tells the task's status as it changes, the last before the answer.
    let statuses: Vec<&Value> = messages
        .iter()
        .filter(|message| message["method"] == "notifications/tasks/status")
        .collect();
    for status in &statuses {
        assert_valid(Spec::V2025, "TaskStatusNotification", status);
        assert_eq!(status["params"]["taskId"], id.as_str());
    }
    let last = statuses.last().expect("a status notification");
    assert_eq!(last["params"]["status"], "completed", "{statuses:?}");
    assert_eq!(
        answer["result"]["_meta"][RELATED_TASK],
        json!({ "taskId": id })
    );
    let done = session.get(&id);
    assert_eq!(done["status"], "completed");

    // A late second answer is accepted and changes nothing.
    let again = session.respond(
        &asked["id"],
        json!({ "action": "accept", "content": { "confirm": false } }),
    );
    assert!((200..300).contains(&again.status), "{}", again.status);
    assert_eq!(session.get(&id), done);
    let result = session.result("tasks/result", json!({ "taskId": id }));
    assert_eq!(text_of(&result), "deleted=true");
}

#[test]
fn questions_asked_together_travel_together_and_each_answer_reaches_its_own() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {}, "elicitation": {} }));
    let id = session.create_task("multi_input", json!({}));
    session.wait_for(&id, "input_required");

    let (request_id, mut stream) = session.stream("tasks/result", json!({ "taskId": id }));
    let first = next_request(&mut stream, "elicitation/create");
    let second = next_request(&mut stream, "elicitation/create");
    let mut asked: Vec<(String, Value)> = [first, second]
        .into_iter()
        .map(|request| {
            assert_valid(Spec::V2025, "ElicitRequest", &request);
            let key = request["id"]
                .as_str()
                .and_then(|asked| asked.strip_prefix(&format!("task/{id}/")))
                .unwrap_or_else(|| panic!("not task/<taskId>/<key>: {request}"))
                .to_owned();
            (key, request)
        })
        .collect();
    asked.sort_by(|a, b| a.0.cmp(&b.0));
    let keys: Vec<&str> = asked.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(keys, ["colour", "name"]);

    // One answer leaves the other question open.
    let name = &asked[1].1;
    let answered = session.respond(
        &name["id"],
        json!({ "action": "accept", "content": { "name": "Ada" } }),
    );
    assert_eq!(answered.status, 202);
    assert_eq!(session.get(&id)["status"], "input_required");

    let colour = &asked[0].1;
    let answered = session.respond(
        &colour["id"],
        json!({ "action": "accept", "content": { "colour": "teal" } }),
    );
    assert_eq!(answered.status, 202);
    let messages = read_to_answer(&mut stream, &request_id);
    let answer = messages.last().unwrap();
    assert_result(Spec::V2025, "CallToolResult", answer);
    assert_eq!(text_of(&answer["result"]), "name=Ada colour=teal");
    assert!(
        messages[..messages.len() - 1]
            .iter()
            .all(|message| message["method"] != "elicitation/create"),
        "a question was asked twice: {messages:?}"
    );
}

#[test]
fn an_answer_reaches_the_task_after_the_stream_that_asked_is_gone() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {}, "elicitation": {} }));
    let id = session.create_task("confirm_delete", json!({ "filename": "d.txt" }));
    session.wait_for(&id, "input_required");
    let (_, mut stream) = session.stream("tasks/result", json!({ "taskId": id }));
    let asked = next_request(&mut stream, "elicitation/create");
    drop(stream);

    let answered = session.respond(
        &asked["id"],
        json!({ "action": "accept", "content": { "confirm": true } }),
    );
    assert_eq!(answered.status, 202);
    session.wait_for(&id, "completed");
    let result = session.result("tasks/result", json!({ "taskId": id }));
    assert_eq!(text_of(&result), "deleted=true");
}

#[test]
fn a_tool_error_fails_the_task_and_a_protocol_error_is_the_results_error() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {} }));

    let id = session.create_task("failing_job", json!({}));
    let failed = session.wait_for(&id, "failed");
    assert_valid(Spec::V2025, "GetTaskResult", &failed);
    for absent in ["result", "error"] {
        assert!(failed.get(absent).is_none(), "{failed}");
    }
    // Its result is the tool error the call would have answered.
    let answer = session.call("tasks/result", json!({ "taskId": id }));
    assert_result(Spec::V2025, "CallToolResult", &answer);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["_meta"][RELATED_TASK],
        json!({ "taskId": id })
    );

    let id = session.create_task("protocol_error_job", json!({}));
    let failed = session.wait_for(&id, "failed");
    assert_valid(Spec::V2025, "GetTaskResult", &failed);
    let (status, code, body) = error_of(&session.send("tasks/result", json!({ "taskId": id })));
    assert_eq!((status, code), (200, -32603), "{body}");
    assert_eq!(body["error"]["message"], "simulated protocol error");
}

#[test]
fn tasks_cancel_answers_the_cancelled_task_and_refuses_a_finished_one() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {} }));

    let id = session.create_task("slow_compute", json!({ "seconds": 60 }));
    let answer = session.call("tasks/cancel", json!({ "taskId": id }));
    assert_result(Spec::V2025, "CancelTaskResult", &answer);
    assert_no_modern_fields(&answer["result"]);
    assert_eq!(answer["result"]["taskId"], id);
    assert_eq!(answer["result"]["status"], "cancelled", "{answer}");
    assert_eq!(session.get(&id)["status"], "cancelled");
    let (status, code, _) = error_of(&session.send("tasks/cancel", json!({ "taskId": id })));
    assert_eq!((status, code), (200, -32602), "cancelling twice");

    let id = session.create_task("slow_compute", json!({ "seconds": 0, "label": "x" }));
    let done = session.wait_for(&id, "completed");
    let (status, code, body) = error_of(&session.send("tasks/cancel", json!({ "taskId": id })));
    assert_eq!((status, code), (200, -32602), "{body}");
    let after = session.get(&id);
    assert_eq!(after["status"], "completed");
    assert_eq!(after["lastUpdatedAt"], done["lastUpdatedAt"]);
}

#[test]
fn tasks_list_shows_only_the_callers_own_tasks() {
    let target = Target::start();
    let first = Session2025::open(&target, json!({ "tasks": {} }));
    let second = Session2025::open(&target, json!({ "tasks": {} }));
    let mine: BTreeSet<String> = (0..2)
        .map(|_| first.create_task("slow_compute", json!({ "seconds": 0 })))
        .collect();
    let theirs: BTreeSet<String> =
        BTreeSet::from([second.create_task("slow_compute", json!({ "seconds": 0 }))]);

    for (session, expected) in [(&first, &mine), (&second, &theirs)] {
        let answer = session.call("tasks/list", json!({}));
        assert_result(Spec::V2025, "ListTasksResult", &answer);
        assert_no_modern_fields(&answer["result"]);
        let listed: BTreeSet<String> = answer["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|task| task["taskId"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(&listed, expected);
    }

    // A caller without a session has no tasks of its own.
    let anonymous = Session2025::anonymous(&target);
    let answer = anonymous.call("tasks/list", json!({}));
    assert_result(Spec::V2025, "ListTasksResult", &answer);
    assert_eq!(answer["result"], json!({ "tasks": [] }));
}

#[test]
fn tasks_list_pages_with_its_cursor_and_refuses_a_garbled_one() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {} }));
    // One more than a page of 50.
    let created: Vec<String> = (0..51)
        .map(|_| session.create_task("slow_compute", json!({ "seconds": 0 })))
        .collect();
    let (tasks, pages) = session.list_all();
    assert!(pages >= 2, "51 tasks fit in one page");
    let listed: Vec<&str> = tasks
        .iter()
        .map(|task| task["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed.iter().collect::<BTreeSet<_>>().len(),
        listed.len(),
        "a task was listed twice"
    );
    assert_eq!(
        listed.iter().copied().collect::<BTreeSet<_>>(),
        created.iter().map(String::as_str).collect::<BTreeSet<_>>()
    );
    // Oldest first.
    let created_at: Vec<&str> = tasks
        .iter()
        .map(|task| task["createdAt"].as_str().unwrap())
        .collect();
    assert!(created_at.is_sorted(), "{created_at:?}");
    let first = session.call("tasks/list", json!({}));
    assert_result(Spec::V2025, "ListTasksResult", &first);
    let cursor = first["result"]["nextCursor"].as_str().unwrap();

    for garbled in [json!("not-a-cursor"), json!(format!("{cursor}x")), json!(7)] {
        let (status, code, body) =
            error_of(&session.send("tasks/list", json!({ "cursor": garbled })));
        assert_eq!((status, code), (200, -32602), "{garbled}: {body}");
    }
}

// ---- task tools run inline ----

#[test]
fn a_task_tool_called_without_a_task_answers_on_an_event_stream() {
    let target = Target::start();
    for session in [
        Session2025::open(&target, json!({})),
        Session2025::anonymous(&target),
    ] {
        let response = session.send(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0.3, "label": "inline" } }),
        );
        assert_eq!(response.status, 200);
        assert!(
            is_event_stream(response.header("content-type")),
            "{:?}",
            response.header("content-type")
        );
        let events = parse_events(&response.body);
        assert_priming(&events[0]);
        let messages: Vec<Value> = events.iter().filter_map(|event| event.message()).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        let answer = &messages[0];
        assert_result(Spec::V2025, "CallToolResult", answer);
        assert_no_modern_fields(&answer["result"]);
        assert_eq!(text_of(&answer["result"]), "computed inline");
        assert!(answer["result"].get("isError").is_none_or(|e| e == false));
    }
}

#[test]
fn an_inline_run_goes_on_when_the_client_goes_away() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    let (_, mut stream) = session.stream(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 1, "label": "left" } }),
    );
    assert_priming(&stream.next_event().expect("a priming event"));
    drop(stream);

    // The session's listing shows the task the call started, and it completes.
    wait::until(
        "the session's task to complete",
        || Value::from(session.list_all().0),
        |tasks| {
            assert_eq!(tasks.as_array().map(Vec::len), Some(1), "{tasks}");
            if tasks[0]["status"] == "completed" {
                return true;
            }
            assert_eq!(tasks[0]["status"], "working", "{tasks}");
            false
        },
    );
}

#[test]
fn an_inline_call_answers_a_tool_error_as_a_result_and_a_protocol_error_as_an_error() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    // `failing_job` requires a task at 2026-07-28; a 2025 client gets it inline.
    let response = session.send(
        "tools/call",
        json!({ "name": "failing_job", "arguments": {} }),
    );
    assert_eq!(response.status, 200);
    assert!(is_event_stream(response.header("content-type")));
    let answer = single_message(&response);
    assert_result(Spec::V2025, "CallToolResult", &answer);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(text_of(&answer["result"]), "the job failed (as designed)");

    let (status, code, body) = error_of(&session.send(
        "tools/call",
        json!({ "name": "protocol_error_job", "arguments": {} }),
    ));
    assert_eq!((status, code), (200, -32603), "{body}");
    assert_eq!(body["error"]["message"], "simulated protocol error");
}

#[test]
fn an_inline_call_with_a_progress_token_is_told_the_progress() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({}));
    // A string token (the conformance suite) and an integer one (the Python SDK).
    for token in [json!("progress-test-1"), json!(42)] {
        let response = session.send(
            "tools/call",
            json!({
                "name": "test_tool_with_progress",
                "arguments": {},
                "_meta": { "progressToken": token },
            }),
        );
        assert!(is_event_stream(response.header("content-type")));
        let events = parse_events(&response.body);
        assert_priming(&events[0]);
        let mut messages: Vec<Value> = events.iter().filter_map(|event| event.message()).collect();
        let answer = messages.pop().expect("an answer");
        assert_result(Spec::V2025, "CallToolResult", &answer);
        assert_eq!(text_of(&answer["result"]), "finished in three steps");
        assert!(
            !messages.is_empty(),
            "{token}: no progress before the result"
        );
        // Progress must grow from one notification to the next; the first may be 0.
        let mut last = -1.0;
        for notification in &messages {
            assert_valid(Spec::V2025, "ProgressNotification", notification);
            let params = &notification["params"];
            assert_eq!(params["progressToken"], token);
            let progress = params["progress"].as_f64().unwrap();
            assert!(progress > last, "progress went from {last} to {progress}");
            last = progress;
        }
        let said: Vec<&str> = messages
            .iter()
            .filter_map(|notification| notification["params"]["message"].as_str())
            .collect();
        assert_eq!(said.last(), Some(&"100/100"), "{said:?}");
    }
}

#[test]
fn an_inline_call_asks_a_client_that_declared_elicitation() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "elicitation": {} }));
    for (action, expected) in [
        (
            Some(json!({ "action": "accept", "content": { "confirm": true } })),
            "deleted=true",
        ),
        (Some(json!({ "action": "decline" })), "deleted=false"),
        (None, "deleted=false"),
    ] {
        let (request_id, mut stream) = session.stream(
            "tools/call",
            json!({ "name": "confirm_delete", "arguments": { "filename": "b.txt" } }),
        );
        assert_eq!(stream.status(), 200);
        assert_priming(&stream.next_event().expect("a priming event"));
        let asked = next_request(&mut stream, "elicitation/create");
        assert_valid(Spec::V2025, "ElicitRequest", &asked);
        assert_eq!(asked["params"]["message"], "Delete b.txt?");
        assert!(
            asked["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("task/")),
            "{asked}"
        );
        let answered = match action {
            Some(action) => session.respond(&asked["id"], action),
            // A client that fails to answer: the request reads as dismissed.
            None => session.post(&json!({
                "jsonrpc": "2.0",
                "id": asked["id"],
                "error": { "code": -32603, "message": "the user interface went away" },
            })),
        };
        assert_eq!(answered.status, 202);

        let messages = read_to_answer(&mut stream, &request_id);
        let answer = messages.last().unwrap();
        assert_result(Spec::V2025, "CallToolResult", answer);
        assert_no_modern_fields(&answer["result"]);
        assert_eq!(text_of(&answer["result"]), expected);
    }
}

#[test]
fn an_inline_call_needing_input_is_a_tool_error_without_elicitation() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "sampling": {} }));
    let response = session.send(
        "tools/call",
        json!({ "name": "confirm_delete", "arguments": { "filename": "c.txt" } }),
    );
    assert_eq!(response.status, 200);
    let events = parse_events(&response.body);
    let messages: Vec<Value> = events.iter().filter_map(|event| event.message()).collect();
    assert_eq!(messages.len(), 1, "no request for input: {messages:?}");
    let answer = &messages[0];
    assert_result(Spec::V2025, "CallToolResult", answer);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = text_of(&answer["result"]);
    assert!(
        text.contains("needs input") && text.contains("elicitation"),
        "{text}"
    );

    // The task that would have waited forever was cancelled.
    wait::until(
        "the session's task to be cancelled",
        || Value::from(session.list_all().0),
        |tasks| {
            assert_eq!(tasks.as_array().map(Vec::len), Some(1), "{tasks}");
            tasks[0]["status"] == "cancelled"
        },
    );
}

// ---- input asked before a task exists ----

/// Asserts that `answer` is something a 2025 client can read: a JSON-RPC error, or a result
/// valid as one of `types` of the 2025-11-25 schema, without the 2026-07-28 multi-round-trip
/// fields (a 2025 client cannot answer `inputRequests`).
fn assert_readable_in_2025(answer: &Value, types: &[&str]) {
    if answer.get("error").is_some() {
        assert_valid(Spec::V2025, "JSONRPCErrorResponse", answer);
        return;
    }
    let result = &answer["result"];
    for field in ["inputRequests", "requestState", "resultType"] {
        assert!(
            result.get(field).is_none(),
            "a 2026-07-28 field {field} reached a 2025 client: {answer}"
        );
    }
    let valid = types.iter().any(|type_name| {
        std::panic::catch_unwind(|| assert_valid(Spec::V2025, type_name, result)).is_ok()
    });
    assert!(valid, "not a valid {types:?}: {answer}");
}

#[test]
fn a_call_asking_for_input_before_any_task_answers_what_a_2025_client_reads() {
    let target = Target::start();
    // A client that declared no elicitation (as the inspector connects), so that whatever
    // the server answers is final: it cannot ask this client anything.
    let session = Session2025::open(&target, json!({ "tasks": {} }));
    for params in [
        // A plain tool whose handler asks for the user's name.
        json!({ "name": "test_input_required_result_elicitation", "arguments": {} }),
        // A task tool that asks for a name before it starts its task (a prepare hook).
        json!({ "name": "test_tool_with_task", "arguments": {} }),
        json!({ "name": "test_tool_with_task", "arguments": {}, "task": { "ttl": 60_000 } }),
    ] {
        let answer = session.call("tools/call", params.clone());
        assert_readable_in_2025(&answer, &["CallToolResult", "CreateTaskResult"]);
    }
    // A prompt that asks for input before it answers.
    let answer = session.call(
        "prompts/get",
        json!({ "name": "test_input_required_result_prompt" }),
    );
    assert_readable_in_2025(&answer, &["GetPromptResult"]);
}

// ---- bad input ----

#[test]
fn malformed_2025_requests_are_json_rpc_errors_with_http_200_and_create_nothing() {
    let target = Target::start();
    let session = Session2025::open(&target, json!({ "tasks": {} }));
    let existing = session.create_task("slow_compute", json!({ "seconds": 0 }));
    session.wait_for(&existing, "completed");
    let unknown = "0123456789abcdef0123456789abcdef";
    let cases = [
        ("tasks/get", json!({}), -32602),
        ("tasks/get", json!({ "taskId": 7 }), -32602),
        ("tasks/get", json!({ "taskId": unknown }), -32602),
        ("tasks/result", json!({}), -32602),
        ("tasks/result", json!({ "taskId": unknown }), -32602),
        ("tasks/cancel", json!({}), -32602),
        ("tasks/cancel", json!({ "taskId": unknown }), -32602),
        (
            "tools/call",
            json!({ "name": "no_such_tool", "arguments": {} }),
            -32602,
        ),
        ("tools/call", json!({ "name": 5 }), -32602),
        ("tools/call", json!({ "arguments": {} }), -32602),
        (
            "tools/call",
            json!({ "name": "slow_compute", "arguments": [1], "task": { "ttl": 60_000 } }),
            -32602,
        ),
        ("no/such/method", json!({}), -32601),
        // A 2026-07-28 method, unknown to this era.
        (
            "tasks/update",
            json!({ "taskId": existing, "inputResponses": {} }),
            -32601,
        ),
    ];
    for (method, params, expected) in cases {
        let body = session.request_body(method, params.clone());
        let (status, code, answer) = error_of(&session.post(&body));
        assert_eq!(
            (status, code),
            (200, expected),
            "{method} {params}: {answer}"
        );
        assert_eq!(answer["id"], body["id"]);
    }
    // A malformed initialize issues no session.
    for params in [
        json!({}),
        json!({ "protocolVersion": 7, "capabilities": {} }),
    ] {
        let body = json!({ "jsonrpc": "2.0", "id": 9, "method": "initialize", "params": params });
        let response = session.client().raw(
            "POST",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        );
        let (status, code, _) = error_of(&response);
        assert_eq!((status, code), (200, -32602), "initialize {params}");
        assert!(response.header("mcp-session-id").is_none(), "{params}");
    }
    let (tasks, _) = session.list_all();
    let ids: Vec<&str> = tasks
        .iter()
        .map(|task| task["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [existing.as_str()], "a refused request created a task");
}

#[test]
fn the_2025_schema_check_refuses_2026_task_shapes() {
    let refuses = |type_name: &str, instance: Value| {
        let outcome = std::panic::catch_unwind(|| assert_valid(Spec::V2025, type_name, &instance));
        assert!(outcome.is_err(), "{type_name} accepted {instance}");
    };
    let task = json!({
        "taskId": "t", "status": "working", "ttl": 1000, "pollInterval": 200,
        "createdAt": "2026-01-01T00:00:00.000Z", "lastUpdatedAt": "2026-01-01T00:00:00.000Z",
    });
    assert_valid(Spec::V2025, "CreateTaskResult", &json!({ "task": task }));
    // The 2026 flattened form.
    let mut flat = task.clone();
    flat["resultType"] = json!("task");
    refuses("CreateTaskResult", flat);
    let mut without_ttl = task.clone();
    without_ttl.as_object_mut().unwrap().remove("ttl");
    refuses("GetTaskResult", without_ttl);
    let mut unknown_status = task;
    unknown_status["status"] = json!("input-required");
    refuses("GetTaskResult", unknown_status);
}
