//! `#[mcp_task]` and `#[step]` through the engine harness: journal keys, replay, options on
//! the virtual clock, the derived input schema, and argument checking.

mod common;

use std::cell::Cell;
use std::time::Duration;

use durable_mcp::TaskStatus;
use durable_mcp::store::StepKind;
use durable_mcp::testing::Harness;
use durable_mcp::wire::{CallToolResult, Json};
use durable_mcp::{McpServer, StepError, TaskContext, TaskError, mcp_task, step};
use serde::{Deserialize, Serialize};
use serde_json::json;

thread_local! {
    /// How many times `double`'s body ran on this thread (tests run one per thread).
    static DOUBLED: Cell<u32> = const { Cell::new(0) };
    /// How many attempts `flaky` made.
    static FLAKY: Cell<u32> = const { Cell::new(0) };
}

/// Doubles a number, counting its runs.
#[step]
async fn double(n: u64) -> Result<u64, StepError> {
    DOUBLED.with(|runs| runs.set(runs.get() + 1));
    Ok(n * 2)
}

/// Fails until its third attempt.
#[step(
    name = "flaky-call",
    retry(limit = 4, delay = "2s", backoff = "constant", jitter = false)
)]
async fn flaky() -> Result<String, StepError> {
    let attempt = FLAKY.with(|runs| {
        runs.set(runs.get() + 1);
        runs.get()
    });
    if attempt < 3 {
        return Err(StepError::retryable(format!("attempt {attempt} failed")));
    }
    Ok(format!("ok after {attempt}"))
}

/// What to double.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Numbers {
    /// The numbers, doubled one step each.
    values: Vec<u64>,
}

/// Doubles every number, one journaled step each, with a durable pause in between.
#[mcp_task(ttl = "1h", poll_interval = "2s")]
async fn double_all(cx: &TaskContext, input: Numbers) -> Result<Json<Vec<u64>>, TaskError> {
    let mut doubled = Vec::new();
    for value in input.values {
        doubled.push(double(value).await?);
        cx.sleep("pause", "1s").await?;
    }
    Ok(Json(doubled))
}

/// No input worth naming.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// Calls the flaky step.
#[mcp_task(name = "retrying", optional)]
async fn retrying_task(_input: Nothing) -> Result<String, TaskError> {
    Ok(flaky().await?)
}

fn harness(server: &McpServer) -> Harness {
    Harness::new(server)
}

#[test]
fn a_step_in_a_loop_journals_each_occurrence_and_replay_skips_them() {
    let server = McpServer::new("t", "0").task(double_all);
    let mut harness = harness(&server);
    let id = harness.create("double_all", json!({ "values": [1, 2, 3] }));
    harness.run_until_idle();
    harness.advance("1s");
    harness.advance("1s");
    harness.advance("1s");
    assert_eq!(harness.status(&id), TaskStatus::Completed);
    let journal = harness.journal(&id);
    assert_eq!(
        common::step_keys(&journal, StepKind::Do),
        ["double", "double#2", "double#3"]
    );
    // Four activations replayed the loop, but each step body ran once.
    assert_eq!(DOUBLED.with(Cell::get), 3);
    let result = harness.result(&id).unwrap();
    assert_eq!(result["structuredContent"], json!([2, 4, 6]));
}

#[test]
fn step_options_reach_the_runtime() {
    let server = McpServer::new("t", "0").task(retrying_task);
    let mut harness = harness(&server);
    let start = harness.now();
    let id = harness.create("retrying", json!({}));
    harness.run_until_idle();
    assert_eq!(FLAKY.with(Cell::get), 1);
    // Constant 2 s backoff without jitter: attempts at 0 s, 2 s, 4 s.
    assert_eq!(
        harness.next_wake(&id),
        Some(start.saturating_add(Duration::from_secs(2)))
    );
    harness.advance("2s");
    assert_eq!(FLAKY.with(Cell::get), 2);
    assert_eq!(
        harness.next_wake(&id),
        Some(start.saturating_add(Duration::from_secs(4)))
    );
    harness.advance("2s");
    assert_eq!(harness.status(&id), TaskStatus::Completed);
    assert_eq!(common::text(&harness.result(&id).unwrap()), "ok after 3");
    assert!(harness.journal(&id).steps.contains_key("flaky-call"));
}

#[test]
fn a_step_outside_a_task_simply_runs() {
    let doubled = common::block_on_ready(double(21));
    assert_eq!(doubled, Ok(42));
    assert_eq!(DOUBLED.with(Cell::get), 1);
}

#[test]
fn task_options_reach_the_definition() {
    let tool = double_all();
    let server = McpServer::new("t", "0").task(tool);
    let registry = server.task_registry();
    let options = registry.get("double_all").unwrap().task_options();
    assert_eq!(options.ttl, Some(Duration::from_secs(3600)));
    assert_eq!(options.poll_interval, Duration::from_secs(2));
}

/// A nested, documented input.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Order {
    /// Who receives the order.
    recipient: Recipient,
    /// How many items.
    quantity: u32,
    /// A note for the courier.
    note: Option<String>,
}

/// A person and where to reach them.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Recipient {
    /// Their name.
    name: String,
    /// Their e-mail address.
    email: String,
}

/// Places an order.
#[mcp_task]
async fn place_order(input: Order) -> Result<CallToolResult, TaskError> {
    Ok(CallToolResult::text(format!(
        "{} × for {}",
        input.quantity, input.recipient.name
    )))
}

#[test]
fn the_input_schema_is_derived_with_field_docs() {
    let tools = described_tools(McpServer::new("t", "0").task(place_order));
    let tool = &tools["place_order"];
    assert_eq!(tool["name"], "place_order");
    assert_eq!(tool["description"], "Places an order.");
    let schema = &tool["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        schema["properties"]["quantity"]["description"],
        "How many items."
    );
    assert_eq!(schema["required"], json!(["recipient", "quantity"]));
    let recipient = &schema["$defs"]["Recipient"];
    assert_eq!(
        recipient["properties"]["email"]["description"],
        "Their e-mail address."
    );
    let pretty = serde_json::to_string_pretty(schema).unwrap() + "\n";
    expect_test::expect_file!["snapshots/order_input_schema.json"].assert_eq(&pretty);
    // The schema is itself valid draft 2020-12 and accepts what the type accepts.
    let validator = jsonschema::draft202012::new(schema).expect("a valid schema");
    let order =
        json!({ "recipient": { "name": "Ada", "email": "ada@example.org" }, "quantity": 2 });
    assert!(validator.is_valid(&order));
    assert!(!validator.is_valid(&json!({ "quantity": "two" })));
}

/// Looks up a recipient.
#[mcp_task]
async fn look_up(input: Order) -> Result<Json<Recipient>, TaskError> {
    Ok(Json(input.recipient))
}

/// A receipt without a schema of its own.
#[derive(Serialize)]
struct Receipt {
    id: u64,
}

/// Issues a receipt.
#[mcp_task]
async fn issue_receipt(_input: Nothing) -> Result<Json<Receipt>, TaskError> {
    Ok(Json(Receipt { id: 1 }))
}

/// The tools of `server` as `tools/list` (2026-07-28) describes them, by name.
fn described_tools(server: McpServer) -> std::collections::BTreeMap<String, serde_json::Value> {
    let harness = harness(&server);
    let router = durable_mcp::http::Router::new(server, harness.shared_engine());
    let client = durable_mcp_tests::mcp::McpClient::new("http://127.0.0.1:1/mcp");
    let (body, headers) = client.build("tools/list", json!({}), true);
    let response = common::block_on_ready(router.handle(durable_mcp::http::HttpRequest {
        method: "POST".into(),
        headers: durable_mcp::http::Headers::new(headers),
        body: body.to_string().into_bytes(),
    }));
    let tools = response.json_body()["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    tools
        .into_iter()
        .map(|tool| (tool["name"].as_str().unwrap().to_owned(), tool))
        .collect()
}

#[test]
fn a_task_returning_json_of_an_object_type_describes_its_output() {
    let tools = described_tools(
        McpServer::new("t", "0")
            .task(look_up)
            .task(double_all)
            .task(issue_receipt)
            .task(place_order),
    );
    let schema = &tools["look_up"]["outputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["email"]["description"],
        "Their e-mail address."
    );
    assert_eq!(schema["required"], json!(["name", "email"]));
    // MCP wants an object's schema: a list's is left out, as is a schema a type lacks.
    assert!(tools["double_all"].get("outputSchema").is_none());
    assert!(tools["issue_receipt"].get("outputSchema").is_none());
    // A result without structured content has none.
    assert!(tools["place_order"].get("outputSchema").is_none());
}

#[test]
fn invalid_arguments_are_a_tool_error_naming_the_field() {
    let server = McpServer::new("t", "0").task(place_order);
    let harness = harness(&server);
    let router = durable_mcp::http::Router::new(server, harness.shared_engine());
    let client = durable_mcp_tests::mcp::McpClient::new("http://127.0.0.1:1/mcp");
    let arguments = json!({ "recipient": { "name": "Ada" }, "quantity": 2 });
    let (body, headers) = client.build(
        "tools/call",
        json!({ "name": "place_order", "arguments": arguments }),
        true,
    );
    let response = common::block_on_ready(router.handle(durable_mcp::http::HttpRequest {
        method: "POST".into(),
        headers: durable_mcp::http::Headers::new(headers),
        body: body.to_string().into_bytes(),
    }));
    let result = &response.json_body()["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("`recipient`") && text.contains("email"),
        "{text}"
    );
    assert!(
        harness.engine().host().store.task_ids().unwrap().is_empty(),
        "no task was created"
    );
}

thread_local! {
    /// The gate `held_open_by_the_test` waits on.
    static GATE: common::Gate = common::Gate::default();
}

/// Waits until the test opens the gate.
#[step]
async fn held_open_by_the_test(label: String) -> Result<String, StepError> {
    GATE.with(Clone::clone).wait().await;
    Ok(label)
}

/// Answers at once.
#[step]
async fn quick(label: String) -> Result<String, StepError> {
    Ok(label)
}

/// Which step to take.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Route {
    /// A label, journaled by the step.
    label: String,
    /// Whether to wait at the gate.
    gated: bool,
}

/// Takes the gated or the quick step.
#[mcp_task]
async fn interleave(input: Route) -> Result<String, TaskError> {
    let label = if input.gated {
        held_open_by_the_test(input.label).await?
    } else {
        quick(input.label).await?
    };
    Ok(label)
}

#[test]
fn steps_of_interleaved_tasks_journal_into_their_own_task() {
    let server = McpServer::new("t", "0").task(interleave);
    let mut harness = harness(&server);
    let gated = harness.create("interleave", json!({ "label": "A", "gated": true }));
    let quick_one = harness.create("interleave", json!({ "label": "B", "gated": false }));
    harness.run_until_idle();
    // A waits inside its step while B runs its own from start to end on the same thread.
    assert!(harness.is_running(&gated));
    assert_eq!(harness.status(&quick_one), TaskStatus::Completed);
    GATE.with(common::Gate::open);
    harness.run_until_idle();
    assert_eq!(harness.status(&gated), TaskStatus::Completed);
    let keys = |id: &str| common::step_keys(&harness.journal(id), StepKind::Do);
    assert_eq!(keys(&gated), ["held_open_by_the_test"]);
    assert_eq!(keys(&quick_one), ["quick"]);
    assert_eq!(common::text(&harness.result(&gated).unwrap()), "A");
    assert_eq!(common::text(&harness.result(&quick_one).unwrap()), "B");
}

/// Fails for good at once.
#[step]
async fn refused() -> Result<(), StepError> {
    Err(StepError::non_retryable("the service said no"))
}

/// Takes the refused step.
#[mcp_task]
async fn takes_a_refusal(_input: Nothing) -> Result<String, TaskError> {
    refused().await?;
    Ok("unreachable".to_owned())
}

#[test]
fn a_step_failure_keeps_its_kind_through_question_mark() {
    let server = McpServer::new("t", "0").task(takes_a_refusal);
    let mut harness = harness(&server);
    let id = harness.create("takes_a_refusal", json!({}));
    harness.run_until_idle();
    let result = harness.result(&id).unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(
        common::text(&result),
        "step \"refused\" failed after 1 attempt: the service said no"
    );
}
