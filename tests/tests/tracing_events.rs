//! The engine's `tracing` events: what a task with a failing, retried step emits, with the
//! task's fields on every event, and that a replay emits none for the steps it reads back.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::{RegistrySetup, Setup, no_jitter, reply, task};
use durable_mcp::{Backoff, StepError, TaskDefinition, TaskRegistry, TaskStatus};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One recorded event: its message, fields and level, and the spans it was emitted in.
#[derive(Clone, Debug)]
struct Recorded {
    level: tracing::Level,
    message: String,
    fields: BTreeMap<String, String>,
    /// `name{field=value ...}` of each span around the event, outermost first.
    spans: Vec<String>,
}

impl Recorded {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// The fields of an event or span, as text.
#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// Keeps every event of the `durable_mcp` target, and the application's.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Recorded>>>);

impl Recorder {
    /// The events recorded so far, and forgets them.
    fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let text = fields
            .0
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join(" ");
        let span = ctx.span(id).expect("a new span is known");
        span.extensions_mut()
            .insert(format!("{}{{{text}}}", attrs.metadata().name()));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let message = fields.0.remove("message").unwrap_or_default();
        let spans = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .from_root()
                    .map(|span| {
                        span.extensions()
                            .get::<String>()
                            .cloned()
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.0.lock().unwrap().push(Recorded {
            level: *event.metadata().level(),
            message,
            fields: fields.0,
            spans,
        });
    }
}

/// A recorder of this thread's events, until the guard is dropped.
fn recording() -> (Recorder, tracing::subscriber::DefaultGuard) {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    (recorder, tracing::subscriber::set_default(subscriber))
}

/// The messages of `events` that name `step`.
fn step_messages<'a>(events: &'a [Recorded], step: &str) -> Vec<(&'a str, Option<&'a str>)> {
    events
        .iter()
        .filter(|event| event.field("step") == Some(step))
        .map(|event| (event.message.as_str(), event.field("attempt")))
        .collect()
}

fn a_retried_step_is_traced_and_its_replay_is_not(setup: Setup) {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let mut env = setup(
        task("t", |cx, _| {
            Box::pin(async move {
                let body: String = cx
                    .step("fetch", || async {
                        let attempt = FETCHES.with(|n| n.replace(n.get() + 1)) + 1;
                        tracing::info!(attempt, "calling upstream");
                        if attempt < 3 {
                            return Err(StepError::retryable("upstream said 503"));
                        }
                        Ok("page".to_owned())
                    })
                    .await?;
                cx.sleep("nap", "1m").await?;
                Ok(reply(body))
            })
        })
        .retry(no_jitter(5, 1_000, Backoff::Constant)),
    );
    let id = env.start();
    let first = recorder.take();

    // Every engine event names the task and its tool.
    let engine: Vec<&Recorded> = first.iter().filter(|e| e.spans.is_empty()).collect();
    assert!(!engine.is_empty());
    for event in &engine {
        assert_eq!(event.field("task_id"), Some(id.as_str()), "{event:?}");
        assert_eq!(event.field("tool"), Some("t"), "{event:?}");
    }
    let messages: Vec<&str> = engine.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "task created",
            "activation started",
            "step attempt started",
            "step attempt failed; retry scheduled",
            "activation ended",
        ]
    );
    let started = engine[1];
    assert_eq!(started.field("reason"), Some("new task"));
    let retry = engine[3];
    assert_eq!(retry.level, tracing::Level::WARN);
    assert_eq!(retry.field("error"), Some("upstream said 503"));
    assert_eq!(retry.field("attempt"), Some("1"));
    let retry_at = retry.field("retry_at").expect("the retry's time");
    assert!(retry_at.ends_with('Z'), "an RFC 3339 time: {retry_at}");
    let ended = engine[4];
    assert_eq!(ended.field("status"), Some("working"));
    assert_eq!(
        ended.field("waiting_for"),
        Some(format!("retry of step \"fetch\" at {retry_at}").as_str())
    );

    // The application's event inside the step sits in the task's and the step's spans.
    let inside: Vec<&Recorded> = first.iter().filter(|e| !e.spans.is_empty()).collect();
    assert_eq!(inside.len(), 1);
    assert_eq!(inside[0].message, "calling upstream");
    assert_eq!(
        inside[0].spans,
        [
            format!("task{{root_task_id={id} task_id={id} tool=t}}"),
            "step{attempt=1 step=fetch}".to_owned()
        ]
    );

    // The second attempt fails too, the third succeeds; each says what woke the task.
    env.advance("1s");
    env.advance("1s");
    let retries = recorder.take();
    assert_eq!(
        step_messages(&retries, "fetch"),
        [
            ("step attempt started", Some("2")),
            ("step attempt failed; retry scheduled", Some("2")),
            ("step attempt started", Some("3")),
            ("step completed", Some("3")),
        ]
    );
    let reasons: Vec<Option<&str>> = retries
        .iter()
        .filter(|e| e.message == "activation started")
        .map(|e| e.field("reason"))
        .collect();
    assert_eq!(reasons, [Some("retry of step \"fetch\""); 2]);
    let waiting = retries
        .iter()
        .rev()
        .find(|e| e.message == "activation ended");
    assert!(
        waiting
            .and_then(|e| e.field("waiting_for"))
            .is_some_and(|w| w.starts_with("end of sleep \"nap\" at ")),
        "{waiting:?}"
    );

    // The wake replays "fetch" from the journal: nothing about it is emitted, and its closure
    // does not run.
    env.advance("1m");
    assert_eq!(env.status(&id), TaskStatus::Completed);
    let replay = recorder.take();
    assert_eq!(step_messages(&replay, "fetch"), []);
    assert!(replay.iter().all(|e| e.message != "calling upstream"));
    let messages: Vec<&str> = replay.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(messages, ["activation started", "activation ended"]);
    assert_eq!(replay[0].field("reason"), Some("end of sleep \"nap\""));
    assert_eq!(replay[1].field("status"), Some("completed"));
    assert_eq!(replay[1].field("ended"), Some("returned"));
}

fn a_step_that_fails_for_good_is_an_error_of_the_step(setup: Setup) {
    let (recorder, _default) = recording();
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            let sent = cx
                .step("send", || async {
                    Err::<(), _>(StepError::non_retryable("address unknown"))
                })
                .await;
            Ok(reply(format!("{}", sent.is_err())))
        })
    }));
    let id = env.start();
    assert_eq!(env.status(&id), TaskStatus::Completed);
    let events = recorder.take();
    let failed = events
        .iter()
        .find(|e| e.message == "step failed")
        .expect("the failure is traced");
    assert_eq!(failed.level, tracing::Level::WARN);
    assert_eq!(failed.field("step"), Some("send"));
    assert_eq!(failed.field("error"), Some("address unknown"));
    assert_eq!(failed.field("attempt"), Some("1"));
}

fn a_name_used_by_two_kinds_of_operation_is_warned_of_once_a_run(setup: Setup) {
    let (recorder, _default) = recording();
    let mut env = setup(task("t", |cx, _| {
        Box::pin(async move {
            cx.step("send", || async { Ok::<_, StepError>(()) }).await?;
            cx.step("send", || async { Ok::<_, StepError>(()) }).await?;
            cx.sleep("send", "1m").await?;
            cx.sleep("send", "1m").await?;
            Ok(reply("sent"))
        })
    }));
    let id = env.start();
    let warned = |events: &[Recorded]| -> Vec<Recorded> {
        events
            .iter()
            .filter(|e| e.field("name") == Some("send"))
            .cloned()
            .collect()
    };
    // A step called twice under one name is a loop, not a mistake: nothing until the sleep.
    let first_run = warned(&recorder.take());
    assert_eq!(first_run.len(), 1, "{first_run:?}");
    let event = &first_run[0];
    assert_eq!(event.level, tracing::Level::WARN);
    assert_eq!(event.field("task_id"), Some(id.as_str()));
    assert_eq!(event.field("key"), Some("send#3"));
    assert!(
        event
            .message
            .contains("used by two kinds of operation of this task, step then sleep")
            && event
                .message
                .contains("give each operation a name of its own"),
        "{}",
        event.message
    );
    // Each run that reaches the second kind says it again, once.
    env.advance("1m");
    let replay = warned(&recorder.take());
    assert_eq!(replay.len(), 1, "{replay:?}");
    assert_eq!(replay[0].field("key"), Some("send#3"));
    env.advance("1m");
    assert_eq!(env.status(&id), TaskStatus::Completed);
}

/// A tree of three tasks: `t` starts `mid`, which asks a question (`go`) and starts `leaf`,
/// which sleeps a minute. Each activation says what woke it (an answer, a child's end), and
/// every event inside each task names the tree's root.
fn an_activation_says_what_woke_it_and_each_task_names_its_root(make: RegistrySetup) {
    let (recorder, _default) = recording();
    let root = TaskDefinition::new("t", |cx, _| {
        Box::pin(async move {
            let mid = cx.start_child("mid", "mid", json!({})).await?;
            let said = mid.output::<String>().await?;
            Ok(reply(format!("mid said {said}")))
        })
    });
    let mid = TaskDefinition::new("mid", |cx, _| {
        Box::pin(async move {
            cx.elicit("go", common::ask("go on?")).await?;
            let leaf = cx.start_child("leaf", "leaf", json!({})).await?;
            let said = leaf.output::<String>().await?;
            Ok(reply(said))
        })
    });
    let leaf = TaskDefinition::new("leaf", |cx, _| {
        Box::pin(async move {
            tracing::info!("leaf at work");
            cx.sleep("work", "1m").await?;
            Ok(reply("done"))
        })
    });
    let mut env = make(
        TaskRegistry::new()
            .register(root)
            .register(mid)
            .register(leaf),
    );
    let id = env.harness.create("t", json!({}));
    env.run_until_idle();
    let mid_id = durable_mcp::__internals::child_task_id(&id, "mid");
    assert_eq!(env.status(&mid_id), TaskStatus::InputRequired);
    recorder.take();

    env.harness.update(
        &mid_id,
        json!({ "go": { "action": "accept", "content": { "ok": true } } }),
    );
    env.run_until_idle();
    env.advance("1m");
    assert_eq!(env.status(&id), TaskStatus::Completed);
    let events = recorder.take();
    let started = |task: &str| -> Vec<String> {
        (events.iter())
            .filter(|e| e.message == "activation started" && e.field("task_id") == Some(task))
            .map(|e| e.field("reason").unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(
        started(&mid_id).first().map(String::as_str),
        Some("run requested: an answer arrived"),
        "{events:#?}"
    );
    assert!(
        started(&id).contains(&"run requested: a child task ended".to_owned()),
        "{events:#?}"
    );
    // The root's id on every activation of the tree, and on the events inside its tasks.
    for event in events.iter().filter(|e| e.message == "activation started") {
        assert_eq!(event.field("root_task_id"), Some(id.as_str()), "{event:?}");
    }
    let at_work = events
        .iter()
        .find(|e| e.message == "leaf at work")
        .expect("the leaf's own event");
    assert!(
        at_work.spans[0].contains(&format!("root_task_id={id}")),
        "{at_work:?}"
    );
}

thread_local! {
    /// How many times the "fetch" closure ran on this test's thread.
    static FETCHES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

common::on_every_store!(
    a_retried_step_is_traced_and_its_replay_is_not,
    a_step_that_fails_for_good_is_an_error_of_the_step,
    a_name_used_by_two_kinds_of_operation_is_warned_of_once_a_run,
);

/// The tests of a registry of several tasks, on every store.
mod trees {
    use super::{an_activation_says_what_woke_it_and_each_task_names_its_root, common};

    common::on_every_store_of_registry!(
        an_activation_says_what_woke_it_and_each_task_names_its_root
    );
}
