//! `greet` from call to result on the harness's virtual clock.
use durable_mcp::TaskStatus;
use durable_mcp::testing::Harness;
use serde_json::json;

#[test]
fn greet_asks_then_sleeps_then_answers() {
    let mut harness = Harness::new(&hello::server());
    let id = harness.create("greet", json!({ "name": "Ada" }));
    harness.run_until_idle();
    assert_eq!(harness.status(&id), TaskStatus::InputRequired);
    let answer = json!({ "action": "accept", "content": { "mood": "curious" } });
    harness.update(&id, json!({ "mood": answer }));
    assert_eq!(harness.status(&id), TaskStatus::Working); // asleep for 3 s
    harness.advance("3s");
    let text = &harness.result(&id).expect("completed")["content"][0]["text"];
    assert_eq!(text, "Hello, Ada! Glad you feel curious.");
}
