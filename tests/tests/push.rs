//! Push in process, on virtual time: a `subscriptions/listen` stream through the router over
//! the test harness's engine hears of each commit that changes what a client sees of a task,
//! as the commit happens, and of nothing else.

mod common;

use std::time::Duration;

use common::{block_on_ready, drain, reply, task};
use durable_mcp::http::{Headers, HttpRequest, Router};
use durable_mcp::testing::Harness;
use durable_mcp::{McpServer, TaskTool};
use durable_mcp_tests::mcp::McpClient;
use serde_json::{Value, json};

/// Says `a`, runs fifty steps, says `b`, sleeps an hour, and answers `done`.
fn chores() -> TaskTool {
    let definition = task("chores", |cx, _| {
        Box::pin(async move {
            cx.status("a").await?;
            for n in 0..50_u32 {
                cx.step(&format!("chore-{n}"), || async move { Ok(n) })
                    .await?;
            }
            cx.status("b").await?;
            cx.sleep("rest", Duration::from_secs(3600)).await?;
            Ok(reply("done"))
        })
    });
    TaskTool::new(definition, json!({ "type": "object" }))
}

/// What each task notification says: status and message.
fn states(messages: &[Value]) -> Vec<(String, Option<String>)> {
    messages
        .iter()
        .filter(|message| message["method"] == "notifications/tasks")
        .map(|message| {
            let task = &message["params"];
            let status = task["status"].as_str().unwrap().to_owned();
            (status, task["statusMessage"].as_str().map(str::to_owned))
        })
        .collect()
}

#[test]
fn a_stream_hears_each_visible_commit_as_it_happens_and_nothing_of_the_others() {
    let server = McpServer::new("push-test", "0.0.0").task(chores());
    let mut harness = Harness::new(&server);
    let router = Router::new(server, harness.shared_engine());
    let task_id = harness.create("chores", json!({}));

    let (body, headers) = McpClient::new("http://127.0.0.1:1/mcp").build(
        "subscriptions/listen",
        json!({ "notifications": { "taskIds": [task_id] } }),
        true,
    );
    let response = block_on_ready(router.handle(HttpRequest {
        method: "POST".to_owned(),
        headers: Headers::new(headers),
        body: body.to_string().into_bytes(),
    }));
    let mut events = response.events.expect("an event stream");
    let (first, ended) = drain(&mut events);
    assert!(!ended);
    assert_eq!(
        first[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(states(&first), [("working".to_owned(), None)]);

    // Fifty step commits change nothing a client sees: two messages, not fifty-two.
    harness.run_until_idle();
    let (ran, _) = drain(&mut events);
    let working = |message: &str| ("working".to_owned(), Some(message.to_owned()));
    assert_eq!(states(&ran), [working("a"), working("b")]);

    // The clock moves on at once: the stream's keep-alive timer is the router's, and the
    // harness would stop at each of its ticks, which nobody polls in between.
    let later = harness.now().saturating_add(Duration::from_secs(3600));
    harness.clock().set(later);
    harness.run_until_idle();
    let (rest, ended) = drain(&mut events);
    assert_eq!(
        states(&rest),
        [("completed".to_owned(), Some("b".to_owned()))]
    );
    assert_eq!(rest[0]["params"]["result"]["content"][0]["text"], "done");
    let end = rest.last().unwrap();
    assert_eq!(end["id"], body["id"]);
    assert_eq!(end["result"]["resultType"], "complete");
    assert!(
        ended,
        "the stream ends once the task has ended and been told"
    );
}
