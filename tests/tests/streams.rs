//! Plain tools that talk to the client while they work, through the router in process: log
//! messages and progress on the call's event stream (both eras), and, on the 2025 lane, input
//! asked of the client as server-to-client requests whose answers come back on other POSTs.

mod common;

use common::{block_on_ready, drain, task};
use durable_mcp::PlainTool;
use durable_mcp::Preparation;
use durable_mcp::http::Router;
use durable_mcp::http::{Headers, HttpRequest, HttpResponse};
use durable_mcp::testing::Harness;
use durable_mcp::wire::{CallToolResult, GetPromptResult, InputRequiredResult, Prompt, Tool};
use durable_mcp::{LogLevel, McpServer, PromptCall, TaskTool, ToolCall};
use durable_mcp_tests::mcp::McpClient;
use serde_json::{Value, json};

/// A task tool that asks for a name before its task exists (a `prepare` hook).
fn greeter() -> TaskTool {
    let definition = task("greet", |_, input| {
        Box::pin(async move { Ok(common::reply(format!("hello {}", input["name"]))) })
    });
    TaskTool::new(definition, json!({ "type": "object" })).prepare(|call: &ToolCall| {
        Ok(match call.input_response("name") {
            Some(answer) => Preparation::Start(answer["content"].clone()),
            None => Preparation::InputRequired(InputRequiredResult::default().elicit(
                "name",
                json!({ "message": "Your name?", "requestedSchema": {
                    "type": "object", "properties": { "name": { "type": "string" } } } }),
            )),
        })
    })
}

fn server() -> McpServer {
    let topic = Prompt::new("topic").description("Asks the user for a topic first.");
    McpServer::new("streams-test", "0.0.0")
        .task(greeter())
        .prompt(topic, |call: PromptCall| {
            let outcome = match call.input_response("topic") {
                Some(answer) => {
                    let topic = answer["content"]["topic"].as_str().unwrap_or("nothing");
                    GetPromptResult::user_text(format!("Write about {topic}.")).into()
                }
                None => InputRequiredResult::default()
                    .elicit(
                        "topic",
                        json!({ "message": "Which topic?", "requestedSchema": {
                            "type": "object", "properties": { "topic": { "type": "string" } } } }),
                    )
                    .into(),
            };
            std::future::ready(Ok(outcome))
        })
        .tool(PlainTool::new(
            Tool::new("chatty", json!({ "type": "object" })),
            |call: ToolCall| {
                call.notify.log(LogLevel::Debug, None, "fine detail");
                call.notify
                    .log(LogLevel::Warning, Some("disk"), "almost full");
                call.notify.progress(1.0, Some(1.0), Some("done"));
                std::future::ready(Ok(CallToolResult::text("said it all").into()))
            },
        ))
        .tool(PlainTool::new(
            Tool::new("ask_model", json!({ "type": "object" })),
            |call: ToolCall| {
                let outcome = match call.input_response("reply") {
                    Some(reply) => CallToolResult::text(format!(
                        "the model said {} (state {:?})",
                        reply["content"]["text"],
                        call.request_state.as_deref()
                    ))
                    .into(),
                    None => InputRequiredResult::default()
                        .state("round-1")
                        .input_request(
                            "reply",
                            json!({ "method": "sampling/createMessage",
                                        "params": { "messages": [], "maxTokens": 5 } }),
                        )
                        .into(),
                };
                std::future::ready(Ok(outcome))
            },
        ))
}

fn router() -> Router {
    let server = server();
    let harness = Harness::new(&server);
    Router::new(server, harness.shared_engine())
}

fn post(router: &Router, headers: Vec<(String, String)>, body: &Value) -> HttpResponse {
    block_on_ready(router.handle(HttpRequest {
        method: "POST".to_owned(),
        headers: Headers::new(headers),
        body: body.to_string().into_bytes(),
    }))
}

/// A 2026-07-28 request as a conforming client builds it, with `meta` added to its `_meta`.
fn modern(router: &Router, method: &str, params: Value, meta: Value) -> HttpResponse {
    let (mut body, headers) = McpClient::new("http://127.0.0.1:1/mcp").build(method, params, true);
    for (key, value) in meta.as_object().unwrap() {
        body["params"]["_meta"][key] = value.clone();
    }
    post(router, headers, &body)
}

/// A 2025 request in session `session`.
fn legacy(router: &Router, session: &str, id: Value, method: &str, params: Value) -> HttpResponse {
    let headers = vec![
        ("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned()),
        ("Mcp-Session-Id".to_owned(), session.to_owned()),
    ];
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    post(router, headers, &body)
}

#[test]
fn a_2026_call_streams_the_log_levels_asked_for_and_progress() {
    let router = router();
    let response = modern(
        &router,
        "tools/call",
        json!({ "name": "chatty" }),
        json!({ "io.modelcontextprotocol/logLevel": "info", "progressToken": 7 }),
    );
    assert_eq!(response.headers[0].1, "text/event-stream");
    let (messages, ended) = drain(&mut response.events.expect("a stream"));
    assert!(ended);
    let methods: Vec<_> = messages.iter().map(|m| m["method"].clone()).collect();
    assert_eq!(
        methods,
        [
            json!("notifications/message"),
            json!("notifications/progress"),
            Value::Null
        ]
    );
    assert_eq!(messages[0]["params"]["data"], "almost full");
    assert_eq!(messages[1]["params"]["progressToken"], 7);
    assert_eq!(messages[2]["result"]["content"][0]["text"], "said it all");
    assert_eq!(messages[2]["result"]["resultType"], "complete");
}

#[test]
fn a_2026_call_that_asks_for_nothing_answers_json() {
    let router = router();
    let response = modern(
        &router,
        "tools/call",
        json!({ "name": "chatty" }),
        json!({}),
    );
    assert!(response.events.is_none());
    assert_eq!(
        response.json_body()["result"]["content"][0]["text"],
        "said it all"
    );
}

/// A 2025 session whose client declared `capabilities`.
fn session(router: &Router, capabilities: Value) -> String {
    let init = post(
        router,
        Vec::new(),
        &json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": { "name": "test", "version": "1" } } }),
    );
    init.headers
        .iter()
        .find(|(name, _)| *name == "mcp-session-id")
        .map(|(_, value)| value.clone())
        .expect("a session id")
}

#[test]
fn on_the_2025_lane_a_prompt_asks_the_client_that_declared_elicitation() {
    let router = router();
    let asked = session(&router, json!({ "elicitation": {} }));
    let response = legacy(
        &router,
        &asked,
        json!(1),
        "prompts/get",
        json!({ "name": "topic" }),
    );
    let mut events = response.events.expect("a stream");
    let (messages, ended) = drain(&mut events);
    assert!(!ended);
    assert_eq!(messages[0]["method"], "elicitation/create");
    let answer = json!({ "jsonrpc": "2.0", "id": messages[0]["id"], "result": {
        "action": "accept", "content": { "topic": "tides" } } });
    assert_eq!(post(&router, Vec::new(), &answer).status, 202);
    let (messages, ended) = drain(&mut events);
    assert!(ended);
    let result = &messages.last().unwrap()["result"];
    assert_eq!(
        result["messages"][0]["content"]["text"],
        "Write about tides."
    );

    // A client that declared no elicitation is told so, and nothing waits.
    let silent = session(&router, json!({}));
    let response = legacy(
        &router,
        &silent,
        json!(2),
        "prompts/get",
        json!({ "name": "topic" }),
    );
    let (messages, ended) = drain(&mut response.events.expect("a stream"));
    assert!(ended);
    let error = &messages.last().unwrap()["error"];
    assert_eq!(error["code"], -32600, "{messages:?}");
    assert!(error["message"].as_str().unwrap().contains("elicitation"));
}

#[test]
fn on_the_2025_lane_a_tools_input_is_asked_of_the_client_and_its_answer_resumes_the_call() {
    let router = router();
    let session = session(&router, json!({ "sampling": {} }));

    let response = legacy(
        &router,
        &session,
        json!(1),
        "tools/call",
        json!({ "name": "ask_model" }),
    );
    let mut events = response.events.expect("a stream");
    let (messages, ended) = drain(&mut events);
    assert!(!ended, "the call waits for the answer");
    assert_eq!(messages.len(), 1, "{messages:?}");
    let request = &messages[0];
    assert_eq!(request["method"], "sampling/createMessage");
    let request_id = request["id"].as_str().unwrap().to_owned();

    // A response to a request nobody sent is accepted and changes nothing.
    let stray = json!({ "jsonrpc": "2.0", "id": "call/nobody/reply", "result": {} });
    assert_eq!(post(&router, Vec::new(), &stray).status, 202);
    assert!(!drain(&mut events).1);

    let answer = json!({ "jsonrpc": "2.0", "id": request_id, "result": {
        "role": "assistant", "content": { "type": "text", "text": "hi" }, "model": "m" } });
    assert_eq!(post(&router, Vec::new(), &answer).status, 202);
    let (messages, ended) = drain(&mut events);
    assert!(ended);
    let result = &messages.last().unwrap()["result"];
    assert_eq!(
        result["content"][0]["text"],
        "the model said \"hi\" (state Some(\"round-1\"))"
    );
    assert!(
        result.get("resultType").is_none(),
        "2025 results have no resultType"
    );
}

#[test]
fn a_2026_call_still_answers_input_required_instead_of_asking() {
    let router = router();
    let response = modern(
        &router,
        "tools/call",
        json!({ "name": "ask_model" }),
        json!({}),
    );
    let body = response.json_body();
    assert_eq!(body["result"]["resultType"], "input_required");
    assert_eq!(body["result"]["requestState"], "round-1");
}

#[test]
fn on_the_2025_lane_a_prepare_hook_asks_the_client_and_then_the_task_is_created() {
    let router = router();
    let asked = session(&router, json!({ "elicitation": {}, "tasks": {} }));
    let params = json!({ "name": "greet", "arguments": {}, "task": { "ttl": 60_000 } });
    let response = legacy(&router, &asked, json!(1), "tools/call", params);
    let mut events = response.events.expect("a stream");
    let (messages, ended) = drain(&mut events);
    assert!(!ended);
    assert_eq!(messages[0]["method"], "elicitation/create");
    let answer = json!({ "jsonrpc": "2.0", "id": messages[0]["id"], "result": {
        "action": "accept", "content": { "name": "Ada" } } });
    assert_eq!(post(&router, Vec::new(), &answer).status, 202);
    let (messages, ended) = drain(&mut events);
    assert!(ended);
    let task = &messages.last().unwrap()["result"]["task"];
    assert_eq!(task["status"], "working", "{messages:?}");
    let id = task["taskId"].as_str().unwrap();
    let got = legacy(
        &router,
        &asked,
        json!(2),
        "tasks/get",
        json!({ "taskId": id }),
    );
    assert_eq!(got.json_body()["result"]["taskId"], id);

    // Without elicitation declared, the call says which capability it needs; no task.
    let silent = session(&router, json!({ "tasks": {} }));
    let params = json!({ "name": "greet", "arguments": {}, "task": { "ttl": 60_000 } });
    let response = legacy(&router, &silent, json!(3), "tools/call", params);
    let body = match response.events {
        Some(mut events) => drain(&mut events).0.pop().unwrap(),
        None => response.json_body(),
    };
    assert_eq!(body["result"]["isError"], true, "{body}");
    let listed = legacy(&router, &silent, json!(4), "tasks/list", json!({}));
    assert_eq!(listed.json_body()["result"]["tasks"], json!([]));
}

/// A 2025 client calling a task tool without `params.task` is followed inline only up to the
/// server's inline deadline (zero here, so the first look decides): it gets a tool error
/// naming the task and saying how to follow it, and the task goes on.
#[test]
fn on_the_2025_lane_an_inline_run_past_its_deadline_is_a_tool_error_and_the_task_goes_on() {
    let sleeper = task("sleeper", |cx, _| {
        Box::pin(async move {
            cx.sleep("nap", "1h").await?;
            Ok(common::reply("rested"))
        })
    });
    let server = McpServer::new("deadline-test", "0.0.0")
        .task(TaskTool::new(sleeper, json!({ "type": "object" })))
        .inline_deadline(std::time::Duration::ZERO);
    let harness = Harness::new(&server);
    let router = Router::new(server, harness.shared_engine());
    let session = session(&router, json!({}));

    let response = legacy(
        &router,
        &session,
        json!(1),
        "tools/call",
        json!({ "name": "sleeper" }),
    );
    let (messages, ended) = drain(&mut response.events.expect("a stream"));
    assert!(ended);
    let result = &messages.last().expect("an answer")["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("is still running"), "{text}");

    let id = text.split_whitespace().nth(2).expect("the task's id");
    let task = modern(&router, "tasks/get", json!({ "taskId": id }), json!({}));
    assert_eq!(task.json_body()["result"]["status"], "working", "{text}");
}
