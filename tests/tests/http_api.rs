//! The black-box HTTP suite: every method, status transition, error code and HTTP status of
//! the MCP endpoint, with every response validated against the upstream JSON Schemas.
//!
//! It runs against a fresh `conformance-server` child, or against the endpoint at
//! `DURABLE_MCP_TEST_URL` (the same suite serves every host). The tests of the 2025-era lane
//! (`initialize`, sessions, 2025-11-25 tasks) are its 2025 section, `blackbox/era_2025.rs`.

mod blackbox;

use blackbox::{
    Spec, Target, assert_complete_ack, assert_forecast, assert_forecast_listed, assert_result,
    assert_valid,
};
use durable_mcp_tests::mcp::McpClient;
use serde_json::{Value, json};

fn error_of(response: &durable_mcp_tests::http::Response) -> (u16, i64, Value) {
    let body = response.json();
    assert_valid(Spec::Core, "JSONRPCErrorResponse", &body);
    let code = body["error"]["code"].as_i64().expect("error code");
    (response.status, code, body)
}

// ---- discovery and listing ----

#[test]
fn discover_advertises_the_tasks_extension_and_the_version() {
    let target = Target::start();
    let response = target
        .client
        .send("server/discover", json!({}), false)
        .json();
    assert_result(Spec::Core, "DiscoverResult", &response);
    assert_valid(Spec::Core, "DiscoverResultResponse", &response);
    let result = &response["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        result["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    assert!(
        result["capabilities"].get("tasks").is_none(),
        "no 2025-style capability"
    );
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
}

#[test]
fn tools_list_names_plain_and_task_tools_with_caching_fields() {
    let target = Target::start();
    let response = target.client.send("tools/list", json!({}), false).json();
    assert_valid(Spec::Core, "ListToolsResultResponse", &response);
    let names: Vec<&str> = response["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for expected in [
        "greet",
        "slow_compute",
        "failing_job",
        "confirm_delete",
        "multi_input",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(response["result"]["ttlMs"].is_u64());
    assert_eq!(response["result"]["cacheScope"], "public");
}

// ---- tools/call ----

#[test]
fn a_plain_tool_answers_at_once() {
    let target = Target::start();
    let response = target
        .client
        .send(
            "tools/call",
            json!({ "name": "greet", "arguments": { "name": "Ada" } }),
            true,
        )
        .json();
    assert_valid(Spec::Core, "CallToolResultResponse", &response);
    assert_eq!(response["result"]["resultType"], "complete");
    assert_eq!(response["result"]["content"][0]["text"], "Hello, Ada!");
}

#[test]
fn a_task_runs_from_working_to_completed() {
    let target = Target::start();
    let response = target
        .client
        .send(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 1, "label": "pi" } }),
            true,
        )
        .json();
    assert_result(Spec::Tasks, "CreateTaskResult", &response);
    let created = &response["result"];
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], 3_600_000);
    assert_eq!(created["pollIntervalMs"], 200);
    for absent in [
        "result",
        "error",
        "inputRequests",
        "requestState",
        "ttl",
        "pollInterval",
    ] {
        assert!(
            created.get(absent).is_none(),
            "CreateTaskResult carries {absent}"
        );
    }
    let id = created["taskId"].as_str().unwrap();
    assert!(id.len() >= 32, "task ids are unguessable: {id}");

    // Durable create: the task is readable at once.
    let first = target
        .client
        .send("tasks/get", json!({ "taskId": id }), true)
        .json();
    assert_result(Spec::Tasks, "GetTaskResult", &first);
    assert_eq!(first["result"]["resultType"], "complete");
    assert_eq!(first["result"]["status"], "working");

    let done = target.wait_for(id, "completed");
    assert_valid(Spec::Tasks, "GetTaskResult", &done);
    assert_eq!(done["result"]["content"][0]["text"], "computed pi");
    assert_eq!(done["result"]["resultType"], "complete");
    assert!(done["lastUpdatedAt"].as_str() >= done["createdAt"].as_str());
    assert_eq!(done["createdAt"], created["createdAt"]);
}

#[test]
fn tasks_get_carries_the_status_meta_the_body_published() {
    let target = Target::start();
    let id = target.create_task("status_meta_job", json!({}));
    let done = target.wait_for(&id, "completed");
    // The last status had no meta: the meta published before it stays.
    assert_eq!(done["statusMessage"], "lap 1 done");
    assert_eq!(
        done["_meta"]["io.durable-mcp-server/status"],
        json!({ "phase": "warmup", "lap": 0 }),
        "{done}"
    );
    assert!(done["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
    let response = target
        .client
        .send("tasks/get", json!({ "taskId": id }), true)
        .json();
    assert_result(Spec::Tasks, "GetTaskResult", &response);

    // A task that published no meta carries no status key.
    let id = target.create_task("many_steps", json!({ "count": 1 }));
    let done = target.wait_for(&id, "completed");
    assert!(
        done["_meta"].get("io.durable-mcp-server/status").is_none(),
        "{done}"
    );
}

#[test]
fn an_optional_task_runs_inline_for_a_client_without_the_extension() {
    let target = Target::start();
    let response = target
        .client
        .send(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0.3, "label": "sync" } }),
            false,
        )
        .json();
    assert_valid(Spec::Core, "CallToolResultResponse", &response);
    assert_eq!(response["result"]["resultType"], "complete");
    assert_eq!(response["result"]["content"][0]["text"], "computed sync");
}

#[test]
fn a_required_task_refuses_a_client_without_the_extension() {
    let target = Target::start();
    let response = target.client.send(
        "tools/call",
        json!({ "name": "failing_job", "arguments": {} }),
        false,
    );
    let (status, code, body) = error_of(&response);
    assert_eq!((status, code), (400, -32021));
    assert_valid(Spec::Core, "MissingRequiredClientCapabilityError", &body);
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
}

#[test]
fn the_legacy_task_param_neither_errors_nor_promotes_a_plain_tool() {
    let target = Target::start();
    let result = target.client.result(
        "tools/call",
        json!({ "name": "greet", "arguments": { "name": "Bo" }, "task": { "ttl": 60000 } }),
    );
    assert_eq!(result["resultType"], "complete");
}

#[test]
fn a_tool_error_completes_the_task_with_is_error() {
    let target = Target::start();
    let id = target.create_task("failing_job", json!({}));
    let done = target.wait_for(&id, "completed");
    assert_valid(Spec::Tasks, "GetTaskResult", &done);
    assert_eq!(done["result"]["isError"], true);
    assert!(done.get("error").is_none());
}

#[test]
fn a_protocol_error_fails_the_task_with_a_json_rpc_error() {
    let target = Target::start();
    let id = target.create_task("protocol_error_job", json!({}));
    let failed = target.wait_for(&id, "failed");
    assert_valid(Spec::Tasks, "GetTaskResult", &failed);
    assert_eq!(failed["error"]["code"], -32603);
    assert_eq!(failed["error"]["message"], "simulated protocol error");
    assert!(failed.get("result").is_none());
}

#[test]
fn an_unknown_tool_is_invalid_params() {
    let target = Target::start();
    let response = target.client.send(
        "tools/call",
        json!({ "name": "nope", "arguments": {} }),
        true,
    );
    let (status, code, _) = error_of(&response);
    assert_eq!((status, code), (200, -32602));
}

#[test]
fn arguments_out_of_range_are_a_tool_error_and_create_no_task() {
    let target = Target::start();
    for seconds in [json!(1e300), json!(-1), json!(3001)] {
        let result = target.client.result(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": seconds } }),
        );
        assert_eq!(result["resultType"], "complete", "{seconds}: {result}");
        assert_eq!(result["isError"], true, "{seconds}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("between 0 and 3000"), "{seconds}: {text}");
    }
}

// ---- a #[tool] with structured output ----

fn listed_tool(target: &Target, name: &str) -> Value {
    let listed = target.client.result("tools/list", json!({}));
    let tool = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {listed}"))
        .clone();
    assert_valid(Spec::Core, "Tool", &tool);
    tool
}

#[test]
fn a_tool_with_json_output_lists_its_output_schema_and_answers_structured_content() {
    let target = Target::start();
    let tool = listed_tool(&target, "forecast");
    assert_forecast_listed(&tool);
    for tasks in [false, true] {
        let response = target.client.send(
            "tools/call",
            json!({ "name": "forecast", "arguments": { "city": " Lisbon ", "days": 2 } }),
            tasks,
        );
        let response = response.json();
        assert_result(Spec::Core, "CallToolResult", &response);
        assert_eq!(response["result"]["resultType"], "complete");
        assert_forecast(&tool, &response["result"]);
    }
}

#[test]
fn a_tool_refuses_bad_arguments_naming_the_field_and_answers_its_errors_as_tool_errors() {
    let target = Target::start();
    for (arguments, says) in [
        (json!({}), "missing field `city`"),
        (json!({ "city": 7 }), "`city`"),
        (json!({ "city": "Lisbon", "days": "two" }), "`days`"),
        (json!({ "city": "  " }), "`city` is empty: name a city"),
        (
            json!({ "city": "Lisbon", "days": 9 }),
            "6 days ahead at most",
        ),
    ] {
        let response = target.client.send(
            "tools/call",
            json!({ "name": "forecast", "arguments": arguments }),
            false,
        );
        let response = response.json();
        assert_result(Spec::Core, "CallToolResult", &response);
        let result = &response["result"];
        assert_eq!(result["isError"], true, "{arguments}: {result}");
        assert!(result.get("structuredContent").is_none(), "{result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{arguments}: {text}");
    }
}

// ---- input: tasks/update and MRTR ----

#[test]
fn an_elicitation_is_answered_through_tasks_update() {
    let target = Target::start();
    let id = target.create_task("confirm_delete", json!({ "filename": "a.txt" }));
    let waiting = target.wait_for(&id, "input_required");
    assert_valid(Spec::Tasks, "GetTaskResult", &waiting);
    let request = &waiting["inputRequests"]["confirm"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Delete a.txt?");

    // An unknown key is acknowledged and changes nothing.
    let ack = target.client.send(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "other": { "action": "decline" } } }),
        true,
    );
    assert_complete_ack(&ack.json());
    assert_eq!(target.get(&id)["status"], "input_required");

    let ack = target.client.result(
        "tasks/update",
        json!({
            "taskId": id,
            "inputResponses": { "confirm": { "action": "accept", "content": { "confirm": true } } },
        }),
    );
    assert_eq!(
        ack,
        json!({ "resultType": "complete", "_meta": ack["_meta"] })
    );
    let done = target.wait_for(&id, "completed");
    assert_eq!(done["result"]["content"][0]["text"], "deleted=true");
}

/// Waits until a `multi_input` task asks both its questions. They are written one after the
/// other: a poll between the two writes sees the task waiting for the first only.
fn both_requests_asked(target: &Target, id: &str) -> Value {
    target.wait_until(id, "input_required with both requests", |task| {
        task["status"] == "input_required"
            && task["inputRequests"]
                .as_object()
                .is_some_and(|requests| requests.len() == 2)
    })
}

#[test]
fn a_partial_update_leaves_the_other_request_outstanding() {
    let target = Target::start();
    let id = target.create_task("multi_input", json!({}));
    let waiting = both_requests_asked(&target, &id);
    let keys: Vec<&String> = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys.len(), 2, "{waiting}");

    target.client.result(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "name": { "action": "accept", "content": { "name": "Ada" } } } }),
    );
    let still = target.get(&id);
    assert_eq!(still["status"], "input_required");
    assert_eq!(still["inputRequests"].as_object().unwrap().len(), 1);
    assert!(still["inputRequests"].get("colour").is_some());

    target.client.result(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "colour": { "action": "accept", "content": { "colour": "teal" } } } }),
    );
    let done = target.wait_for(&id, "completed");
    assert_eq!(done["result"]["content"][0]["text"], "name=Ada colour=teal");
}

#[test]
fn answers_racing_a_running_attempt_are_all_kept() {
    // The first answer starts an attempt; the second lands while it runs (or just before, or
    // just after). Whatever the interleaving, both answers reach the body.
    let target = Target::start();
    for delay_ms in [0, 1, 3, 10] {
        let id = target.create_task("multi_input", json!({}));
        both_requests_asked(&target, &id);
        let answer = |key: &str, content: Value| {
            let client = McpClient::new(&target.client.url());
            let id = id.clone();
            let key = key.to_owned();
            move || {
                let update = json!({ "taskId": id, "inputResponses": { key: { "action": "accept", "content": content } } });
                assert_eq!(
                    client.result("tasks/update", update)["resultType"],
                    "complete"
                );
            }
        };
        let first = answer("name", json!({ "name": "Ada" }));
        let second = answer("colour", json!({ "colour": "teal" }));
        std::thread::scope(|scope| {
            scope.spawn(first);
            // Not synchronisation: a stagger that varies the interleaving from run to run.
            // The test holds for every interleaving, and awaits its outcome below.
            std::thread::sleep(std::time::Duration::from_millis(delay_ms));
            scope.spawn(second);
        });
        let done = target.wait_for(&id, "completed");
        assert_eq!(
            done["result"]["content"][0]["text"], "name=Ada colour=teal",
            "second answer {delay_ms} ms after the first"
        );
    }
}

#[test]
fn a_panicking_task_ends_as_a_tool_error_and_the_host_goes_on() {
    let target = Target::start();
    for (arguments, expected) in [
        (
            json!({}),
            "the task body panicked: panicking_job panicked on purpose",
        ),
        (
            json!({ "in_step": true }),
            "a step of panicking_job panicked on purpose",
        ),
    ] {
        let id = target.create_task("panicking_job", arguments.clone());
        let done = target.wait_for(&id, "completed");
        assert_eq!(done["result"]["isError"], true, "{arguments}: {done}");
        let text = done["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(expected), "{arguments}: {text}");
    }
    // The same host (for a Worker: the same isolate and objects) serves on.
    let id = target.create_task("many_steps", json!({ "count": 3 }));
    let done = target.wait_for(&id, "completed");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("ran 3 steps"), "{text}");
}

/// A `tools/call` without the Tasks extension but with elicitation, as the core revision's
/// clients send it (the Python SDK's default mode).
fn call_without_tasks(client: &McpClient, params: Value) -> Value {
    let response = client.call_without_tasks(params).json();
    assert_valid(Spec::Core, "JSONRPCResultResponse", &response);
    response["result"].clone()
}

/// The round's `requestState`, after checking the round is a valid `InputRequiredResult`
/// asking exactly `keys` by elicitation.
fn input_round(round: &Value, keys: &[&str]) -> String {
    assert_valid(Spec::Core, "InputRequiredResult", round);
    assert_eq!(round["resultType"], "input_required", "{round}");
    let asked: Vec<&String> = round["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(asked, keys, "{round}");
    for key in keys {
        assert_eq!(round["inputRequests"][key]["method"], "elicitation/create");
    }
    round["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned()
}

#[test]
fn a_task_asks_a_client_without_the_extension_in_input_rounds() {
    let target = Target::start();
    let call = json!({ "name": "confirm_delete", "arguments": { "filename": "r.txt" } });
    let round = call_without_tasks(&target.client, call.clone());
    let state = input_round(&round, &["confirm"]);
    assert_eq!(
        round["inputRequests"]["confirm"]["params"]["message"],
        "Delete r.txt?"
    );

    let mut retry = call;
    retry["inputResponses"] =
        json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
    retry["requestState"] = json!(state);
    let done = call_without_tasks(&target.client, retry.clone());
    assert_valid(Spec::Core, "CallToolResult", &done);
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["content"][0]["text"], "deleted=true");

    // The task is stored: a retry of the last round (an answer lost on the way) answers the
    // same result, and the answer is not recorded twice.
    let again = call_without_tasks(&target.client, retry);
    assert_eq!(again["content"][0]["text"], "deleted=true");
}

#[test]
fn two_questions_asked_at_once_are_one_round() {
    let target = Target::start();
    let call = json!({ "name": "multi_input", "arguments": {} });
    let round = call_without_tasks(&target.client, call.clone());
    let state = input_round(&round, &["colour", "name"]);
    let mut retry = call;
    retry["inputResponses"] = json!({
        "name": { "action": "accept", "content": { "name": "Ada" } },
        "colour": { "action": "accept", "content": { "colour": "green" } },
    });
    retry["requestState"] = json!(state);
    let done = call_without_tasks(&target.client, retry);
    assert_eq!(done["content"][0]["text"], "name=Ada colour=green");
}

#[test]
fn a_request_state_naming_no_task_of_the_tool_is_refused() {
    let target = Target::start();
    let round = call_without_tasks(
        &target.client,
        json!({ "name": "confirm_delete", "arguments": {} }),
    );
    let state = input_round(&round, &["confirm"]);
    let answers = json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
    for (tool, state, says) in [
        ("multi_input", state.as_str(), "belongs to a call of"),
        (
            "confirm_delete",
            "durable-mcp/task/no-such-task",
            "cannot continue",
        ),
    ] {
        let params = json!({
            "name": tool, "arguments": {}, "inputResponses": answers, "requestState": state,
        });
        let (status, code, body) = error_of(&target.client.call_without_tasks(params));
        assert_eq!((status, code), (200, -32602), "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    // The refused answers reached no task: the first one still waits.
    let round = call_without_tasks(
        &target.client,
        json!({ "name": "confirm_delete", "arguments": {}, "requestState": state }),
    );
    input_round(&round, &["confirm"]);
}

#[test]
fn a_task_asking_a_client_without_elicitation_is_refused_with_32021() {
    let target = Target::start();
    let response = target.client.send(
        "tools/call",
        json!({ "name": "confirm_delete", "arguments": {} }),
        false,
    );
    let (status, code, body) = error_of(&response);
    assert_eq!((status, code), (400, -32021), "{body}");
}

#[test]
fn a_call_may_ask_for_input_before_it_creates_a_task() {
    let target = Target::start();
    let response = target
        .client
        .send(
            "tools/call",
            json!({ "name": "test_tool_with_task", "arguments": {} }),
            true,
        )
        .json();
    assert_valid(Spec::Core, "JSONRPCResultResponse", &response);
    assert_valid(Spec::Core, "InputRequiredResult", &response["result"]);
    let round_one = &response["result"];
    assert_eq!(round_one["resultType"], "input_required");
    assert_eq!(
        round_one["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let state = round_one["requestState"].as_str().expect("requestState");

    let created = target.client.result(
        "tools/call",
        json!({
            "name": "test_tool_with_task",
            "arguments": {},
            "inputResponses": { "user_name": { "action": "accept", "content": { "name": "Alice" } } },
            "requestState": state,
        }),
    );
    assert_eq!(created["resultType"], "task");
    assert!(created.get("requestState").is_none());
    let done = target.wait_for(created["taskId"].as_str().unwrap(), "completed");
    assert!(done.get("requestState").is_none());
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Alice")
    );
}

// ---- cancellation ----

#[test]
fn cancel_stops_a_sleeping_task_and_is_idempotent() {
    let target = Target::start();
    let id = target.create_task("slow_compute", json!({ "seconds": 60 }));
    let ack = target
        .client
        .send("tasks/cancel", json!({ "taskId": id }), true)
        .json();
    assert_complete_ack(&ack);
    let cancelled = target.wait_for(&id, "cancelled");
    assert_valid(Spec::Tasks, "GetTaskResult", &cancelled);
    let again = target
        .client
        .result("tasks/cancel", json!({ "taskId": id }));
    assert_eq!(again["resultType"], "complete");
    assert_eq!(target.get(&id)["status"], "cancelled");
}

#[test]
fn cancelling_a_finished_task_acknowledges_and_changes_nothing() {
    let target = Target::start();
    let id = target.create_task("slow_compute", json!({ "seconds": 0, "label": "x" }));
    let done = target.wait_for(&id, "completed");
    target
        .client
        .result("tasks/cancel", json!({ "taskId": id }));
    let after = target.get(&id);
    assert_eq!(after["status"], "completed");
    assert_eq!(after["lastUpdatedAt"], done["lastUpdatedAt"]);
}

// ---- tasks/* errors ----

#[test]
fn unknown_task_ids_are_invalid_params_on_every_task_method() {
    let target = Target::start();
    for (method, params) in [
        (
            "tasks/get",
            json!({ "taskId": "0123456789abcdef0123456789abcdef" }),
        ),
        (
            "tasks/cancel",
            json!({ "taskId": "0123456789abcdef0123456789abcdef" }),
        ),
        (
            "tasks/update",
            json!({ "taskId": "0123456789abcdef0123456789abcdef", "inputResponses": {} }),
        ),
    ] {
        let (_, code, _) = error_of(&target.client.send(method, params, true));
        assert_eq!(code, -32602, "{method}");
    }
}

#[test]
fn task_methods_need_the_extension_declared_in_that_request() {
    let target = Target::start();
    let id = target.create_task("slow_compute", json!({ "seconds": 60 }));
    for (method, params) in [
        ("tasks/get", json!({ "taskId": id })),
        ("tasks/cancel", json!({ "taskId": id })),
        (
            "tasks/update",
            json!({ "taskId": id, "inputResponses": {} }),
        ),
    ] {
        let (status, code, body) = error_of(&target.client.send(method, params, false));
        assert_eq!((status, code), (400, -32021), "{method}");
        assert_valid(Spec::Core, "MissingRequiredClientCapabilityError", &body);
    }
    assert_eq!(
        target.get(&id)["status"],
        "working",
        "nothing was cancelled"
    );
}

#[test]
fn malformed_task_params_are_refused_and_change_nothing() {
    let target = Target::start();
    let id = target.create_task("confirm_delete", json!({ "filename": "b.txt" }));
    let before = target.wait_for(&id, "input_required");
    for params in [
        json!({ "taskId": id, "inputResponses": "yes" }),
        json!({ "taskId": id, "inputResponses": { "confirm": true } }),
        json!({ "taskId": id }),
    ] {
        let (status, code, _) = error_of(&target.client.send("tasks/update", params.clone(), true));
        assert_eq!((status, code), (200, -32602), "{params}");
    }
    let (_, code, _) = error_of(
        &target
            .client
            .send("tasks/get", json!({ "taskId": 7 }), true),
    );
    assert_eq!(code, -32602);
    assert_eq!(target.get(&id), before);
}

// ---- the envelope and the headers ----

#[test]
fn a_request_without_the_envelope_is_invalid_params_with_http_400() {
    let target = Target::start();
    let (mut body, headers) = target.client.build("tools/list", json!({}), false);
    body["params"].as_object_mut().unwrap().remove("_meta");
    let (status, code, _) = error_of(&target.client.send_built(&body, &headers));
    assert_eq!((status, code), (400, -32602));

    let (mut body, headers) = target.client.build("tools/list", json!({}), false);
    body["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let (status, code, _) = error_of(&target.client.send_built(&body, &headers));
    assert_eq!((status, code), (400, -32602));
}

#[test]
fn an_unsupported_version_is_refused_with_the_supported_list() {
    let target = Target::start();
    let (mut body, mut headers) = target.client.build("tools/list", json!({}), false);
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    set_header(&mut headers, "MCP-Protocol-Version", "2099-01-01");
    let (status, code, body) = error_of(&target.client.send_built(&body, &headers));
    assert_eq!((status, code), (400, -32022));
    assert_valid(Spec::Core, "UnsupportedProtocolVersionError", &body);
    assert_eq!(body["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(body["error"]["data"]["requested"], "2099-01-01");
}

/// A change to a well-formed request's headers.
type Alteration = Box<dyn Fn(&mut Vec<(String, String)>)>;

fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    headers.retain(|(key, _)| !key.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value.to_owned()));
}

fn remove_header(headers: &mut Vec<(String, String)>, name: &str) {
    headers.retain(|(key, _)| !key.eq_ignore_ascii_case(name));
}

#[test]
fn routing_headers_must_agree_with_the_body() {
    let target = Target::start();
    let id = target.create_task("slow_compute", json!({ "seconds": 60 }));
    let cases: Vec<(&str, Value, Alteration)> = vec![
        (
            "tools/list",
            json!({}),
            Box::new(|h| remove_header(h, "MCP-Protocol-Version")),
        ),
        (
            "tools/list",
            json!({}),
            Box::new(|h| set_header(h, "MCP-Protocol-Version", "2025-11-25")),
        ),
        (
            "tools/list",
            json!({}),
            Box::new(|h| remove_header(h, "Mcp-Method")),
        ),
        (
            "tools/list",
            json!({}),
            Box::new(|h| set_header(h, "Mcp-Method", "tools/call")),
        ),
        (
            "tools/call",
            json!({ "name": "greet", "arguments": {} }),
            Box::new(|h| set_header(h, "Mcp-Name", "slow_compute")),
        ),
        (
            "tools/call",
            json!({ "name": "greet", "arguments": {} }),
            Box::new(|h| remove_header(h, "Mcp-Name")),
        ),
        (
            "prompts/get",
            json!({ "name": "test_simple_prompt" }),
            Box::new(|h| set_header(h, "Mcp-Name", "test_prompt_with_image")),
        ),
        (
            "prompts/get",
            json!({ "name": "test_simple_prompt" }),
            Box::new(|h| remove_header(h, "Mcp-Name")),
        ),
        (
            "tasks/get",
            json!({ "taskId": id }),
            Box::new(|h| set_header(h, "Mcp-Name", "other-task")),
        ),
        (
            // A change announced as a read.
            "tasks/cancel",
            json!({ "taskId": id }),
            Box::new(|h| set_header(h, "Mcp-Method", "tasks/get")),
        ),
        (
            "tasks/cancel",
            json!({ "taskId": id }),
            Box::new(|h| {
                // A header sent twice reads as "X, X", which is not the id.
                let value = h.iter().find(|(k, _)| k == "Mcp-Name").unwrap().1.clone();
                h.push(("Mcp-Name".to_owned(), value));
            }),
        ),
    ];
    for (index, (method, params, alter)) in cases.into_iter().enumerate() {
        let (body, mut headers) = target.client.build(method, params, true);
        alter(&mut headers);
        let (status, code, body) = error_of(&target.client.send_built(&body, &headers));
        assert_eq!(
            (status, code),
            (400, -32020),
            "case {index} ({method}): {body}"
        );
        assert_valid(Spec::Core, "HeaderMismatchError", &body);
    }
    assert_eq!(
        target.get(&id)["status"],
        "working",
        "the refused cancel changed nothing"
    );
}

#[test]
fn a_base64_encoded_name_header_is_decoded() {
    let target = Target::start();
    let (body, mut headers) = target.client.build(
        "tools/call",
        json!({ "name": "greet", "arguments": {} }),
        true,
    );
    // "greet" in the sentinel form.
    set_header(&mut headers, "Mcp-Name", "=?base64?Z3JlZXQ=?=");
    let response = target.client.send_built(&body, &headers);
    assert_eq!(response.status, 200, "{}", response.json());
    assert_eq!(
        response.json()["result"]["content"][0]["text"],
        "Hello, world!"
    );
}

#[test]
fn removed_and_unknown_methods_are_not_found_with_http_404() {
    let target = Target::start();
    for method in [
        "initialize",
        "ping",
        "tasks/list",
        "tasks/result",
        "logging/setLevel",
        "resources/subscribe",
        "no/such/method",
    ] {
        let (body, headers) = target.client.build(method, json!({}), true);
        let (status, code, _) = error_of(&target.client.send_built(&body, &headers));
        assert_eq!((status, code), (404, -32601), "{method}");
    }
    // `initialize` without any envelope, as a 2025 client sends it, goes down the 2025 lane
    // (see the 2025 section, `blackbox/era_2025.rs`); with the 2026 envelope it stays -32601
    // (above).
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "old", "version": "1" } } });
    let response = target.client.raw(
        "POST",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    assert_eq!(response.json()["result"]["protocolVersion"], "2025-11-25");
}

// ---- HTTP ----

#[test]
fn notifications_and_client_responses_are_accepted_without_a_body() {
    let target = Target::start();
    for body in [
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }),
        json!({ "jsonrpc": "2.0", "id": 5, "result": {} }),
    ] {
        let response = target.client.raw(
            "POST",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        );
        assert_eq!(response.status, 202, "{body}");
        assert!(response.body.is_empty());
    }
}

#[test]
fn only_post_is_allowed() {
    let target = Target::start();
    for method in ["GET", "DELETE", "PUT"] {
        let response = target.client.raw(method, &[], b"");
        assert_eq!(response.status, 405, "{method}");
        assert_eq!(response.header("allow"), Some("POST"));
    }
}

#[test]
fn foreign_hosts_and_origins_are_forbidden() {
    let target = Target::start();
    let (body, headers) = target.client.build("tools/list", json!({}), false);
    for (name, value) in [
        ("Host", "evil.example"),
        ("Origin", "http://evil.example"),
        // User information before the host: the host is evil.example, not localhost.
        ("Origin", "http://localhost:80@evil.example"),
    ] {
        let mut headers = headers.clone();
        set_header(&mut headers, name, value);
        let response = target.client.send_built(&body, &headers);
        assert_eq!(response.status, 403, "{name}: {value}");
    }
    let mut headers = headers.clone();
    set_header(&mut headers, "Origin", "http://localhost:6274");
    assert_eq!(target.client.send_built(&body, &headers).status, 200);
}

#[test]
fn malformed_bodies_get_json_rpc_errors() {
    let target = Target::start();
    let post = |body: &[u8]| {
        target
            .client
            .raw("POST", &[("Content-Type", "application/json")], body)
    };

    let (status, code, body) = error_of(&post(b"{not json"));
    assert_eq!((status, code), (400, -32700));
    assert!(body.get("id").is_none());

    let (status, code, _) = error_of(&post(b"[]"));
    assert_eq!((status, code), (400, -32600));

    let (status, code, body) =
        error_of(&post(br#"{"jsonrpc":"1.0","id":3,"method":"tools/list"}"#));
    assert_eq!((status, code), (400, -32600));
    assert_eq!(body["id"], 3);

    let (_, code, _) = error_of(&target.client.send("tools/call", json!({ "name": 5 }), true));
    assert_eq!(code, -32602);
    let (_, code, _) = error_of(&target.client.send(
        "tools/call",
        json!({ "name": "greet", "arguments": [1] }),
        true,
    ));
    assert_eq!(code, -32602);
}

#[test]
fn bodies_over_the_limit_are_refused_with_413() {
    // Both hosts read at most 4 MiB of body.
    let target = Target::start();
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","pad":"{}"}}"#,
        "x".repeat(4 << 20)
    );
    let response = target.client.raw(
        "POST",
        &[("Content-Type", "application/json")],
        huge.as_bytes(),
    );
    assert_eq!(response.status, 413);
}

// ---- the checker itself ----

#[test]
fn the_schema_check_refuses_what_the_wire_forbids() {
    let refuses = |spec: Spec, type_name: &str, instance: Value| {
        let outcome = std::panic::catch_unwind(|| assert_valid(spec, type_name, &instance));
        assert!(outcome.is_err(), "{type_name} accepted {instance}");
    };
    let task = json!({
        "resultType": "task", "taskId": "t", "status": "working",
        "createdAt": "2026-01-01T00:00:00.000Z", "lastUpdatedAt": "2026-01-01T00:00:00.000Z",
        "ttlMs": 1000, "pollIntervalMs": 200,
    });
    assert_valid(Spec::Tasks, "CreateTaskResult", &task);
    let mut legacy = task.clone();
    legacy.as_object_mut().unwrap().remove("ttlMs");
    legacy["ttl"] = json!(1000);
    refuses(Spec::Tasks, "CreateTaskResult", legacy);
    refuses(
        Spec::Tasks,
        "CreateTaskResult",
        json!({ "resultType": "task", "task": task }),
    );
    let mut completed = task.clone();
    completed["status"] = json!("completed");
    completed["resultType"] = json!("complete");
    refuses(Spec::Tasks, "GetTaskResult", completed);
}

// ---- resources ----

#[test]
fn resources_are_listed_and_read() {
    let target = Target::start();
    let listed = target
        .client
        .send("resources/list", json!({}), false)
        .json();
    assert_valid(Spec::Core, "ListResourcesResultResponse", &listed);
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|resource| resource["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"test://static-text"), "{uris:?}");

    let templates = target
        .client
        .send("resources/templates/list", json!({}), false)
        .json();
    assert_valid(
        Spec::Core,
        "ListResourceTemplatesResultResponse",
        &templates,
    );
    let template = &templates["result"]["resourceTemplates"][0]["uriTemplate"];
    assert_eq!(template, "test://template/{id}/data");

    let read = target
        .client
        .send(
            "resources/read",
            json!({ "uri": "test://static-text" }),
            false,
        )
        .json();
    assert_valid(Spec::Core, "ReadResourceResultResponse", &read);
    assert_eq!(read["result"]["contents"][0]["uri"], "test://static-text");
    assert!(read["result"]["contents"][0]["text"].is_string());

    let from_template = target
        .client
        .send(
            "resources/read",
            json!({ "uri": "test://template/42/data" }),
            false,
        )
        .json();
    assert_valid(Spec::Core, "ReadResourceResultResponse", &from_template);

    let (status, code, body) = error_of(&target.client.send(
        "resources/read",
        json!({ "uri": "test://nothing" }),
        false,
    ));
    assert_eq!((status, code), (200, -32602));
    assert_eq!(body["error"]["data"]["uri"], "test://nothing");
}

// ---- prompts and completion ----

#[test]
fn discover_advertises_prompts_and_completions() {
    let target = Target::start();
    let response = target
        .client
        .send("server/discover", json!({}), false)
        .json();
    assert_result(Spec::Core, "DiscoverResult", &response);
    let capabilities = &response["result"]["capabilities"];
    // Every list may change, and a listen stream hears of it.
    assert_eq!(
        capabilities["prompts"],
        json!({ "listChanged": true }),
        "{capabilities}"
    );
    assert_eq!(capabilities["tools"], json!({ "listChanged": true }));
    assert_eq!(
        capabilities["resources"],
        json!({ "listChanged": true, "subscribe": true })
    );
    assert_eq!(capabilities["completions"], json!({}), "{capabilities}");
}

#[test]
fn prompts_are_listed_with_their_arguments_and_caching_fields() {
    let target = Target::start();
    let response = target.client.send("prompts/list", json!({}), false).json();
    assert_valid(Spec::Core, "ListPromptsResultResponse", &response);
    let result = &response["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].is_u64());
    assert_eq!(result["cacheScope"], "public");
    let prompts = result["prompts"].as_array().unwrap();
    let names: Vec<&str> = prompts
        .iter()
        .map(|prompt| prompt["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt",
        ],
        "registration order"
    );
    assert!(prompts[0].get("arguments").is_none(), "{}", prompts[0]);
    assert_eq!(
        prompts[1]["arguments"],
        json!([
            { "name": "arg1", "description": "First test argument", "required": true },
            { "name": "arg2", "description": "Second test argument", "required": true },
        ])
    );
}

#[test]
fn a_prompt_is_expanded_with_its_arguments() {
    let target = Target::start();
    let simple = target
        .client
        .send(
            "prompts/get",
            json!({ "name": "test_simple_prompt" }),
            false,
        )
        .json();
    assert_result(Spec::Core, "GetPromptResult", &simple);
    assert_eq!(simple["result"]["resultType"], "complete");
    assert_eq!(
        simple["result"]["messages"],
        json!([{
            "role": "user",
            "content": { "type": "text", "text": "This is a simple prompt for testing." },
        }])
    );

    let with_arguments = target
        .client
        .send(
            "prompts/get",
            json!({
                "name": "test_prompt_with_arguments",
                "arguments": { "arg1": "hello", "arg2": "wörld" },
            }),
            false,
        )
        .json();
    assert_result(Spec::Core, "GetPromptResult", &with_arguments);
    assert_eq!(
        with_arguments["result"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='hello', arg2='wörld'"
    );

    let embedded = target
        .client
        .send(
            "prompts/get",
            json!({
                "name": "test_prompt_with_embedded_resource",
                "arguments": { "resourceUri": "test://example-resource" },
            }),
            false,
        )
        .json();
    assert_result(Spec::Core, "GetPromptResult", &embedded);
    let resource = &embedded["result"]["messages"][0]["content"];
    assert_eq!(resource["type"], "resource");
    assert_eq!(resource["resource"]["uri"], "test://example-resource");

    let image = target
        .client
        .send(
            "prompts/get",
            json!({ "name": "test_prompt_with_image" }),
            false,
        )
        .json();
    assert_result(Spec::Core, "GetPromptResult", &image);
    assert_eq!(image["result"]["messages"][0]["content"]["type"], "image");
    assert_eq!(
        image["result"]["messages"][0]["content"]["mimeType"],
        "image/png"
    );
}

#[test]
fn a_prompt_missing_a_required_argument_is_invalid_params_naming_it() {
    let target = Target::start();
    let (status, code, body) = error_of(&target.client.send(
        "prompts/get",
        json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "only" } }),
        false,
    ));
    assert_eq!((status, code), (200, -32602), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"arg2\""), "{message}");
    assert!(!message.contains("\"arg1\""), "{message}");
    assert_eq!(body["error"]["data"]["missing"], json!(["arg2"]));

    let (_, code, body) = error_of(&target.client.send(
        "prompts/get",
        json!({ "name": "test_prompt_with_arguments" }),
        false,
    ));
    assert_eq!(code, -32602);
    assert_eq!(body["error"]["data"]["missing"], json!(["arg1", "arg2"]));

    // Argument values are strings on the wire.
    let (_, code, body) = error_of(&target.client.send(
        "prompts/get",
        json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": 1, "arg2": "b" } }),
        false,
    ));
    assert_eq!(code, -32602, "{body}");
}

#[test]
fn an_unknown_prompt_is_invalid_params() {
    let target = Target::start();
    let (status, code, body) = error_of(&target.client.send(
        "prompts/get",
        json!({ "name": "no_such_prompt" }),
        false,
    ));
    assert_eq!((status, code), (200, -32602));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_prompt"),
        "{body}"
    );
}

#[test]
fn a_prompt_may_ask_for_input_before_it_answers() {
    let target = Target::start();
    let params = json!({ "name": "test_input_required_result_prompt" });
    let asked = target
        .client
        .send("prompts/get", params.clone(), false)
        .json();
    assert_result(Spec::Core, "InputRequiredResult", &asked);
    assert_eq!(asked["result"]["resultType"], "input_required");
    let request = &asked["result"]["inputRequests"]["user_context"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(
        request["params"]["requestedSchema"]["required"],
        json!(["context"])
    );

    let mut answered = params;
    answered["inputResponses"] = json!({
        "user_context": { "action": "accept", "content": { "context": "a code review" } },
    });
    let expanded = target.client.send("prompts/get", answered, false).json();
    assert_result(Spec::Core, "GetPromptResult", &expanded);
    assert_eq!(expanded["result"]["resultType"], "complete");
    let text = expanded["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("a code review"), "{text}");
}

#[test]
fn completion_suggests_values_for_prompt_and_template_arguments() {
    let target = Target::start();
    let complete = |params: Value| {
        let response = target
            .client
            .send("completion/complete", params, false)
            .json();
        assert_result(Spec::Core, "CompleteResult", &response);
        assert_eq!(response["result"]["resultType"], "complete");
        response["result"]["completion"].clone()
    };
    let prompt = complete(json!({
        "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
        "argument": { "name": "arg1", "value": "par" },
    }));
    assert_eq!(prompt["values"], json!(["paris", "park", "party"]));
    let template = complete(json!({
        "ref": { "type": "ref/resource", "uri": "test://template/{id}/data" },
        "argument": { "name": "id", "value": "4" },
        "context": { "arguments": {} },
    }));
    assert_eq!(template["values"], json!(["42"]));
    let nothing = complete(json!({
        "ref": { "type": "ref/prompt", "name": "test_simple_prompt" },
        "argument": { "name": "anything", "value": "" },
    }));
    assert_eq!(nothing["values"], json!([]));
}

#[test]
fn completion_of_an_unknown_reference_is_invalid_params() {
    let target = Target::start();
    for reference in [
        json!({ "type": "ref/prompt", "name": "no_such_prompt" }),
        json!({ "type": "ref/resource", "uri": "test://nothing/{id}" }),
        json!({ "type": "ref/tool", "name": "greet" }),
    ] {
        let (status, code, body) = error_of(&target.client.send(
            "completion/complete",
            json!({ "ref": reference, "argument": { "name": "a", "value": "" } }),
            false,
        ));
        assert_eq!((status, code), (200, -32602), "{reference}: {body}");
    }
}

// ---- argument headers (x-mcp-header) ----

#[test]
fn arguments_mirrored_in_param_headers_must_match() {
    let target = Target::start();
    let params = json!({ "name": "echo_region", "arguments": { "region": "Hello" } });
    let cases = [
        (Some("Hello"), 200),
        (Some("=?base64?SGVsbG8=?="), 200),
        (Some("=?base64?SGVsbG8?="), 400),
        (Some("Other"), 400),
        (None, 400),
    ];
    for (header, expected) in cases {
        let (body, mut headers) = target.client.build("tools/call", params.clone(), false);
        if let Some(value) = header {
            headers.push(("Mcp-Param-Region".to_owned(), value.to_owned()));
        }
        let response = target.client.send_built(&body, &headers);
        assert_eq!(response.status, expected, "{header:?}: {}", response.json());
        if expected == 400 {
            assert_valid(Spec::Core, "HeaderMismatchError", &response.json());
        } else {
            assert_eq!(
                response.json()["result"]["content"][0]["text"],
                "region=Hello"
            );
        }
    }
}

#[test]
fn a_tool_refusing_for_a_missing_capability_answers_http_400() {
    let target = Target::start();
    let call = json!({ "name": "test_missing_capability", "arguments": {} });
    let (status, code, body) = error_of(&target.client.send("tools/call", call, false));
    assert_eq!((status, code), (400, -32021));
    assert_valid(Spec::Core, "MissingRequiredClientCapabilityError", &body);
}

// ---- more transitions ----

#[test]
fn a_task_waiting_for_input_can_be_cancelled() {
    let target = Target::start();
    let id = target.create_task("confirm_delete", json!({ "filename": "c.txt" }));
    target.wait_for(&id, "input_required");
    target
        .client
        .result("tasks/cancel", json!({ "taskId": id }));
    let cancelled = target.wait_for(&id, "cancelled");
    assert_valid(Spec::Tasks, "GetTaskResult", &cancelled);
    assert!(cancelled.get("inputRequests").is_none());
    // A late answer is acknowledged and changes nothing.
    target.client.result(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "confirm": { "action": "accept", "content": { "confirm": true } } } }),
    );
    assert_eq!(target.get(&id)["status"], "cancelled");
}

/// A recorded cancel wins over an answer that comes after it: the answer is acknowledged, the
/// task's compensation runs, and it ends `cancelled`, never `completed`.
#[test]
fn an_answer_after_a_cancel_is_acknowledged_and_the_task_ends_cancelled() {
    let target = Target::start();
    let id = target.create_task("trip", json!({ "ask": true }));
    target.wait_for(&id, "input_required");
    target
        .client
        .result("tasks/cancel", json!({ "taskId": id }));
    let acknowledged = target.client.result(
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "go": { "action": "accept", "content": { "go": true } } } }),
    );
    assert_eq!(
        acknowledged,
        json!({ "resultType": "complete", "_meta": acknowledged["_meta"] })
    );
    let cancelled = target.wait_for(&id, "cancelled");
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    assert_eq!(target.get(&id)["status"], "cancelled");
}

#[test]
fn a_task_outliving_its_ttl_fails_as_expired() {
    let target = Target::start();
    let created = target.client.result(
        "tools/call",
        json!({ "name": "expiring_job", "arguments": {} }),
    );
    assert_eq!(created["ttlMs"], 1000);
    let id = created["taskId"].as_str().unwrap();
    let failed = target.wait_for(id, "failed");
    assert_valid(Spec::Tasks, "GetTaskResult", &failed);
    assert_eq!(failed["error"]["code"], -32603);
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{failed}"
    );
    // Cancelling or answering an expired task is acknowledged and changes nothing.
    target
        .client
        .result("tasks/cancel", json!({ "taskId": id }));
    assert_eq!(target.get(id)["status"], "failed");
}
