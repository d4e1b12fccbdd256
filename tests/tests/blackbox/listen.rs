//! The push section of the black-box suite: `subscriptions/listen` streams (2026-07-28, with
//! the Tasks extension's `taskIds`). Every frame is validated against the upstream schemas and
//! must carry the stream's subscription id. Like the rest of the suite it runs against a fresh
//! `conformance-server` or the endpoint at `DURABLE_MCP_TEST_URL` (the Worker). What a host
//! restart does to a stream is checked per host (`native_host`, `workerd_tasks`).

use durable_mcp_tests::listen::{End, Listen as Stream, answer_errand};
use serde_json::{Value, json};

use super::{Spec, Target, assert_result, assert_valid};

/// The header the fixture server reads the caller's principal from.
const PRINCIPAL: &str = durable_mcp_tests::http::FIXTURE_PRINCIPAL_HEADER;

/// An open listen stream whose every frame is validated against the schemas.
struct Listen(Stream);

impl Listen {
    /// Opens a stream asking for `notifications`, as `principal` when given.
    fn open(target: &Target, notifications: Value, principal: Option<&str>) -> Listen {
        let headers: Vec<(&str, &str)> = principal.map(|p| (PRINCIPAL, p)).into_iter().collect();
        let stream = Stream::open(&target.client, notifications, &headers);
        assert_valid(Spec::Core, "SubscriptionsListenRequest", &stream.request);
        Listen(stream)
    }

    /// The next message (carrying the stream's id).
    fn next(&mut self) -> Option<Value> {
        self.0.next_message()
    }

    /// The acknowledgement, validated; its `notifications`.
    fn acknowledged(&mut self) -> Value {
        let ack = self.next().expect("an acknowledgement");
        assert_valid(Spec::Core, "SubscriptionsAcknowledgedNotification", &ack);
        ack["params"]["notifications"].clone()
    }

    /// The next task notification, validated; the task it carries.
    fn task(&mut self) -> Value {
        let message = self.next().expect("a task notification");
        assert_eq!(message["method"], "notifications/tasks", "{message}");
        assert_valid(Spec::Tasks, "TaskStatusNotification", &message);
        message["params"].clone()
    }

    /// The graceful end: the `complete` response, validated, and nothing after it.
    fn completes(mut self) {
        let (before, end) = self.0.end();
        assert!(before.is_empty(), "frames before the end: {before:?}");
        let End::Complete(response) = end else {
            panic!("the stream ended without its complete response");
        };
        assert_result(Spec::Core, "SubscriptionsListenResult", &response);
        assert_eq!(response["result"]["resultType"], "complete", "{response}");
    }
}

/// What a task notification says, without its times.
fn state(task: &Value) -> (String, Option<String>, bool) {
    (
        task["status"].as_str().unwrap_or_default().to_owned(),
        task["statusMessage"].as_str().map(str::to_owned),
        task.get("inputRequests").is_some(),
    )
}

#[test]
fn a_stream_sees_every_change_of_a_task_in_order_and_ends_when_it_has_ended() {
    let target = Target::start();
    let task_id = target.create_task("watched_errand", json!({ "seconds": 1 }));
    let mut listen = Listen::open(&target, json!({ "taskIds": [task_id] }), None);
    assert_eq!(listen.acknowledged(), json!({ "taskIds": [task_id] }));

    let mut seen = vec![listen.task()];
    while seen.last().unwrap()["status"] != "input_required" {
        seen.push(listen.task());
    }
    let asking = seen.last().unwrap();
    assert_eq!(asking["taskId"], task_id.as_str());
    assert!(asking["inputRequests"]["go"].is_object(), "{asking}");
    answer_errand(&target.client, &task_id);
    while seen.last().unwrap()["status"] != "completed" {
        seen.push(listen.task());
    }
    let done = seen.last().unwrap();
    assert_eq!(
        done["result"]["content"][0]["text"], "errand done",
        "{done}"
    );
    // Polling would read each of these states; the stream sends each once, in order.
    let states: Vec<_> = seen.iter().map(state).collect();
    let working = |message: &str| ("working".to_owned(), Some(message.to_owned()), false);
    let expected_tail = [
        (
            "input_required".to_owned(),
            Some("waiting".to_owned()),
            true,
        ),
        working("waiting"),
        working("going"),
        ("completed".to_owned(), Some("going".to_owned()), false),
    ];
    assert!(states.ends_with(&expected_tail), "{states:#?}");
    let head = &states[..states.len() - expected_tail.len()];
    assert!(
        head == [working("waiting")]
            || head == [("working".to_owned(), None, false), working("waiting")],
        "before the question: {states:#?}"
    );
    listen.completes();
}

#[test]
fn a_stream_opened_on_an_ended_task_sends_it_once_and_ends() {
    let target = Target::start();
    let task_id = target.create_task("status_meta_job", json!({}));
    let done = target.wait_for(&task_id, "completed");
    let mut listen = Listen::open(&target, json!({ "taskIds": [task_id] }), None);
    assert_eq!(listen.acknowledged(), json!({ "taskIds": [task_id] }));
    let task = listen.task();
    assert_eq!(state(&task), state(&done));
    assert_eq!(task["result"], done["result"]);
    listen.completes();
}

#[test]
fn a_task_of_another_caller_or_of_nobody_is_left_out_and_tells_nothing() {
    let target = Target::start();
    let (body, mut headers) = target.client.build(
        "tools/call",
        json!({ "name": "watched_errand", "arguments": { "seconds": 3600 } }),
        true,
    );
    headers.push((PRINCIPAL.to_owned(), "alice".to_owned()));
    let created = target.client.send_built(&body, &headers).json();
    let alices = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let unknown = "no-such-task";

    for stranger in [Some("bob"), None] {
        let ids = json!({ "taskIds": [alices, unknown] });
        let mut listen = Listen::open(&target, ids, stranger);
        assert_eq!(listen.acknowledged(), json!({ "taskIds": [] }));
        // Nothing to follow: the stream ends at once, having sent nothing of alice's task.
        listen.completes();
    }
    let mut listen = Listen::open(&target, json!({ "taskIds": [alices] }), Some("alice"));
    assert_eq!(listen.acknowledged(), json!({ "taskIds": [alices] }));
    assert_eq!(listen.task()["taskId"], alices.as_str());
}

#[test]
fn list_changes_reach_the_streams_that_asked_for_them_and_no_other() {
    let target = Target::start();
    let mut tools = Listen::open(&target, json!({ "toolsListChanged": true }), None);
    assert_eq!(tools.acknowledged(), json!({ "toolsListChanged": true }));
    let mut prompts = Listen::open(&target, json!({ "promptsListChanged": true }), None);
    assert_eq!(
        prompts.acknowledged(),
        json!({ "promptsListChanged": true })
    );
    target
        .client
        .result("tools/call", json!({ "name": "test_trigger_tool_change" }));
    target.client.result(
        "tools/call",
        json!({ "name": "test_trigger_prompt_change" }),
    );
    let changed = tools.next().expect("a tools change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_valid(Spec::Core, "ToolListChangedNotification", &changed);
    // The prompts stream's first frame after its acknowledgement is the prompts change:
    // the tools change, announced first, did not reach it.
    let changed = prompts.next().expect("a prompts change");
    assert_eq!(changed["method"], "notifications/prompts/list_changed");
    assert_valid(Spec::Core, "PromptListChangedNotification", &changed);
}

#[test]
fn task_ids_need_the_tasks_extension_and_a_filter_is_required() {
    let target = Target::start();
    let response = target.client.send(
        "subscriptions/listen",
        json!({ "notifications": { "taskIds": ["t"] } }),
        false,
    );
    let body = response.json();
    assert_eq!(response.status, 400, "{body}");
    assert_eq!(body["error"]["code"], -32021);
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let response = target.client.send("subscriptions/listen", json!({}), true);
    assert_eq!(
        response.json()["error"]["code"],
        -32602,
        "{:?}",
        response.json()
    );
}

#[test]
fn a_stream_following_too_many_tasks_is_refused_and_says_the_bound() {
    let target = Target::start();
    let ids: Vec<String> = (0..1000).map(|n| format!("task-{n}")).collect();
    let response = target.client.send(
        "subscriptions/listen",
        json!({ "notifications": { "taskIds": ids } }),
        true,
    );
    let body = response.json();
    assert_eq!(body["error"]["code"], -32602, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("at most") && message.contains("another stream"),
        "{message}"
    );
}

#[test]
fn an_empty_filter_is_acknowledged_empty_and_ends_at_once() {
    let target = Target::start();
    let mut listen = Listen::open(&target, json!({}), None);
    assert_eq!(listen.acknowledged(), json!({}));
    listen.completes();
}

#[test]
fn a_resource_change_reaches_the_streams_that_follow_that_resource() {
    let target = Target::start();
    let watched = "test://static-text";
    let filter =
        json!({ "resourceSubscriptions": [watched, watched], "resourcesListChanged": true });
    let mut listen = Listen::open(&target, filter, None);
    assert_eq!(
        listen.acknowledged(),
        json!({ "resourceSubscriptions": [watched], "resourcesListChanged": true })
    );
    for uri in ["test://static-binary", watched] {
        target.client.result(
            "tools/call",
            json!({ "name": "touch_resource", "arguments": { "uri": uri } }),
        );
    }
    // The binary resource's update is not for this stream; the list changes are, twice.
    let mut heard = Vec::new();
    while heard.len() < 3 {
        heard.push(listen.next().expect("a notification"));
    }
    let methods: Vec<&str> = heard
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/resources/list_changed",
            "notifications/resources/updated",
            "notifications/resources/list_changed"
        ]
    );
    assert_valid(Spec::Core, "ResourceListChangedNotification", &heard[0]);
    assert_valid(Spec::Core, "ResourceUpdatedNotification", &heard[1]);
    assert_eq!(heard[1]["params"]["uri"], watched);
}
