//! Helpers shared by the behaviour tests.
#![allow(dead_code, unused_macros, unused_imports)]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use durable_mcp::LocalBoxFuture;
use durable_mcp::store::{Applied, StepKind, StepStatus, TaskState, Write};
use durable_mcp::store::{Store, StoreError};
use durable_mcp::testing::{Harness, MemoryStore, ObservedStore, StoreCall, StoreObserver};
use durable_mcp::{TaskContext, TaskDefinition, TaskError, TaskRegistry};
use serde_json::Value;

/// Counts runs of something (a closure, a side effect) across replays.
#[derive(Clone, Debug, Default)]
pub struct Counter(Rc<Cell<u32>>);

impl Counter {
    pub fn hit(&self) -> u32 {
        self.0.set(self.0.get() + 1);
        self.0.get()
    }
    pub fn get(&self) -> u32 {
        self.0.get()
    }
}

/// A log of events in order, shared with task bodies.
#[derive(Clone, Debug, Default)]
pub struct Log(Rc<RefCell<Vec<String>>>);

impl Log {
    pub fn push(&self, event: impl Into<String>) {
        self.0.borrow_mut().push(event.into());
    }
    pub fn events(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
}

/// A task definition from a closure returning a boxed body future.
pub fn task(
    name: &str,
    body: impl for<'a> Fn(&'a TaskContext, Value) -> LocalBoxFuture<'a, Result<Value, TaskError>>
    + 'static,
) -> TaskDefinition {
    TaskDefinition::new(name, body)
}

/// The text of a tool result's first content block.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The keys of the journal's step rows of `kind`, oldest first.
pub fn step_keys(state: &TaskState, kind: StepKind) -> Vec<String> {
    let mut rows: Vec<_> = state.steps.values().filter(|s| s.kind == kind).collect();
    rows.sort_by_key(|s| s.seq);
    rows.into_iter().map(|s| s.key.clone()).collect()
}

/// The status of the step row under `key`.
pub fn step_status(state: &TaskState, key: &str) -> Option<StepStatus> {
    state.steps.get(key).map(|s| s.status)
}

/// A tool result with one text block.
pub fn reply(text: impl Into<String>) -> Value {
    serde_json::json!({ "content": [{ "type": "text", "text": text.into() }] })
}

/// A harness and the temporary directory its store lives in (if any).
pub struct Env {
    pub harness: Harness,
    /// What the harness's store was asked to write.
    pub counts: Rc<WriteCounts>,
    _dir: Option<tempfile::TempDir>,
}

impl std::ops::Deref for Env {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.harness
    }
}

impl std::ops::DerefMut for Env {
    fn deref_mut(&mut self) -> &mut Harness {
        &mut self.harness
    }
}

impl Env {
    /// Creates a task of the registered task `t` with `{}` as input, and runs it until idle.
    pub fn start(&mut self) -> String {
        let id = self.harness.create("t", serde_json::json!({}));
        self.harness.run_until_idle();
        id
    }

    /// The engine failure of a task that must have failed.
    pub fn failure(&self, id: &str) -> durable_mcp::store::TaskFailure {
        let snapshot = self.harness.get(id);
        assert_eq!(snapshot.status, durable_mcp::TaskStatus::Failed);
        snapshot.error.expect("a failed task carries its error")
    }

    /// Asserts that the task failed with an error message containing `expected`.
    pub fn assert_failed_with(&self, id: &str, expected: &str) {
        let message = self.failure(id).message;
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    }
}

/// Makes an environment for one task definition.
pub type Setup = fn(TaskDefinition) -> Env;

/// The in-memory store.
pub fn memory(definition: TaskDefinition) -> Env {
    memory_of(TaskRegistry::new().register(definition))
}

/// A SQLite store in a temporary file.
pub fn sqlite(definition: TaskDefinition) -> Env {
    sqlite_of(TaskRegistry::new().register(definition))
}

/// Makes an environment for several task definitions.
#[allow(dead_code, reason = "not every test file registers several tasks")]
pub type RegistrySetup = fn(TaskRegistry) -> Env;

/// The in-memory store, running `registry`'s tasks.
pub fn memory_of(registry: TaskRegistry) -> Env {
    env(registry, MemoryStore::new(), None)
}

/// A SQLite store in a temporary file, running `registry`'s tasks.
pub fn sqlite_of(registry: TaskRegistry) -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = durable_mcp::native::SqliteStore::open(dir.path().join("tasks.db")).expect("open");
    env(registry, store, Some(dir))
}

fn env(registry: TaskRegistry, inner: impl Store + 'static, dir: Option<tempfile::TempDir>) -> Env {
    let counts = Rc::new(WriteCounts::default());
    let store = ObservedStore::new(inner, Rc::clone(&counts));
    let harness = Harness::with_store(registry, Rc::new(store));
    Env {
        harness,
        counts,
        _dir: dir,
    }
}

/// A refusal a test puts in a store's way: the error for a call it refuses.
type Refusal = Box<dyn Fn(StoreCall<'_>) -> Option<StoreError>>;

/// Counts the writes passing through a store, and refuses the calls a test asks it to.
#[derive(Default)]
pub struct WriteCounts {
    writes: Cell<u32>,
    publishes: Cell<u32>,
    refuse: RefCell<Option<Refusal>>,
}

impl WriteCounts {
    /// From now on, refuses the calls `refuse` answers with an error, as a failing store does.
    #[allow(dead_code, reason = "not every test file makes its store fail")]
    pub fn refuse(&self, refuse: impl Fn(StoreCall<'_>) -> Option<StoreError> + 'static) {
        *self.refuse.borrow_mut() = Some(Box::new(refuse));
    }
    /// Calls of `apply`, `create` and `purge` so far.
    pub fn writes(&self) -> u32 {
        self.writes.get()
    }
    /// Status publications so far.
    pub fn publishes(&self) -> u32 {
        self.publishes.get()
    }
}

impl StoreObserver for WriteCounts {
    fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        if let Some(error) = self
            .refuse
            .borrow()
            .as_ref()
            .and_then(|refuse| refuse(call))
        {
            return Err(error);
        }
        if let StoreCall::Create { .. } | StoreCall::Apply { .. } | StoreCall::Purge { .. } = call {
            self.writes.set(self.writes.get() + 1);
        }
        Ok(())
    }
    fn applied(&self, _: &str, writes: &[Write], applied: Applied) {
        if matches!(applied, Applied::Done { .. }) {
            let published = writes
                .iter()
                .filter(|w| matches!(w, Write::PublishStatus { .. }))
                .count();
            self.publishes.set(self.publishes.get() + published as u32);
        }
    }
}

/// A future that stays pending until the gate is opened.
#[derive(Clone, Default)]
pub struct Gate(Rc<RefCell<(bool, Option<std::task::Waker>)>>);

impl Gate {
    pub fn open(&self) {
        let mut state = self.0.borrow_mut();
        state.0 = true;
        if let Some(waker) = state.1.take() {
            waker.wake();
        }
    }
    pub async fn wait(&self) {
        std::future::poll_fn(|cx| {
            let mut state = self.0.borrow_mut();
            if state.0 {
                std::task::Poll::Ready(())
            } else {
                state.1 = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
        })
        .await
    }
}

/// Polls a future that must finish without waiting (an engine tick with nothing to run).
pub fn block_on_ready<T>(future: impl std::future::Future<Output = T>) -> T {
    let waker = std::task::Waker::noop();
    let mut context = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => panic!("the future did not finish at once"),
    }
}

/// A retry policy without jitter, so that retry times are exact.
pub fn no_jitter(
    limit: u32,
    delay_ms: u64,
    backoff: durable_mcp::Backoff,
) -> durable_mcp::RetryPolicy {
    durable_mcp::RetryPolicy {
        limit,
        delay: std::time::Duration::from_millis(delay_ms),
        backoff,
        max_delay: std::time::Duration::from_secs(3600),
        jitter: false,
    }
}

/// Runs each named `fn(Setup)` as a test on the memory store and on the SQLite store.
macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        mod memory_store {
            $(#[test] fn $name() { super::$name(super::common::memory) })*
        }
        mod sqlite_store {
            $(#[test] fn $name() { super::$name(super::common::sqlite) })*
        }
    };
}
pub(crate) use on_every_store;

/// Runs each named `fn(RegistrySetup)` as a test on the memory store and on the SQLite store:
/// for tests that register several tasks.
macro_rules! on_every_store_of_registry {
    ($($name:ident),* $(,)?) => {
        mod memory_store {
            $(#[test] fn $name() { super::$name(super::common::memory_of) })*
        }
        mod sqlite_store {
            $(#[test] fn $name() { super::$name(super::common::sqlite_of) })*
        }
    };
}
pub(crate) use on_every_store_of_registry;

/// An elicitation asking `message`, with one yes/no field (`ok`): the form shape clients show.
pub fn ask(message: &str) -> Value {
    serde_json::json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { "ok": { "type": "boolean" } },
        },
    })
}

/// Every SSE message `events` yields until it has nothing more for now, and whether it ended.
pub fn drain(events: &mut durable_mcp::__internals::sse::EventStream) -> (Vec<Value>, bool) {
    use futures_util::Stream;
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    let mut body = Vec::new();
    loop {
        match std::pin::Pin::new(&mut *events).poll_next(&mut context) {
            std::task::Poll::Ready(Some(frame)) => body.extend(frame),
            std::task::Poll::Ready(None) => {
                return (durable_mcp::__internals::sse::parse_messages(&body), true);
            }
            std::task::Poll::Pending => {
                return (durable_mcp::__internals::sse::parse_messages(&body), false);
            }
        }
    }
}
