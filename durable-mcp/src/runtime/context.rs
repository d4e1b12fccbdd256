//! `TaskContext`: the API a task body runs against, a thin async shell over the activation's
//! state machine ([`Activation`]).
//!
//! Every operation asks the machine, which decides from the journal as this activation has
//! changed it: a hit returns what was recorded without running anything; a miss runs (or
//! records) the operation, and the machine's writes go to the store at once, guarded by the
//! activation's lease. When the body must wait (a sleep, a retry backoff, an unanswered
//! elicitation), is cancelled, or hits an engine failure, the machine records why and the
//! operation never completes: the driver settles the task and drops the body's future. No user
//! code runs past such a point.
//!
//! Journal keys are claimed when an operation is *called*, not when its future is first
//! polled, so they follow the order of the calls (see [`TaskContext`] on concurrency).

mod children;
mod cleanup;
mod input;
mod replayed;
mod steps;

use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::error::{StepError, TaskError};
use super::host::Host;
use super::pacer::Pacer;
use super::ports::{LocalBoxFuture, StoreError};
use super::route::TaskRoute;
use crate::core::activation::{Activation, Decision, NameUse, Settings, Stop};
use crate::core::outcome::End;
use crate::core::{EngineError, Limits, RetryPolicy, TaskState, Timestamp, parse_duration};

pub use children::{ChildTask, ChildTool};
pub use input::{Elicit, ElicitWithin, Status};
pub use steps::Step;

/// A duration given to [`TaskContext::sleep`] and the other calls that wait: a [`Duration`] or
/// a string.
///
/// Write a literal with [`duration!`](crate::duration): `duration!("5s")` is a `Duration`
/// checked at compile time, so a malformed literal does not build. A string (`"5s"`) is parsed
/// with [`parse_duration`](crate::parse_duration) when the call runs, and a malformed one fails
/// the task there: keep it for text only known at run time, such as a setting.
pub trait IntoDelay {
    /// The duration, or the parse error of a malformed string.
    fn into_delay(self) -> Result<Duration, crate::core::DurationError>;
}

impl IntoDelay for Duration {
    fn into_delay(self) -> Result<Duration, crate::core::DurationError> {
        Ok(self)
    }
}

impl IntoDelay for &str {
    fn into_delay(self) -> Result<Duration, crate::core::DurationError> {
        parse_duration(self)
    }
}

/// The context of one running task: journaled steps, durable sleeps, input, status.
///
/// A body receives `&TaskContext` and must reach the outside world only through its steps:
/// everything outside a step re-runs on every replay, so it has to be deterministic (branch on
/// step results and on what the context records, [`now`](Self::now),
/// [`random_u64`](Self::random_u64) and [`uuid`](Self::uuid), never on clocks or randomness read
/// any other way).
///
/// # Concurrency inside a body
///
/// Steps may run concurrently (`futures::join!`, `try_join_all`, `select!`), with these rules:
/// - A journal key is claimed when the operation is *called* (`cx.step(..)`, `cx.sleep(..)`,
///   a `#[step]` fn with owned arguments), in call order. `try_join_all(items.map(|i|
///   fetch(i)))` gets `fetch`, `fetch#2`, ... in the iterator's order on every run, and
///   [`idempotency_key`](Self::idempotency_key) names the key the next call gets. Every kind
///   of operation draws on the same names: a sleep named like a step before it gets the next
///   key (`fetch#2`), and the run logs a warning, since two kinds under one name are rarely
///   meant. Branches
///   that each run several steps one after another break ties by timing, which differs
///   between a first run and a replay: give such branches their own step names (say, with the
///   item's id in the name).
/// - When one branch must wait (a retry backoff, a sleep, an unanswered elicitation), only
///   that branch stops: the others go on until the whole body pauses with no step attempt
///   running, and every attempt they ran is recorded. Then the activation ends; if an attempt
///   recorded a result after the wait was asked for, the body runs again at once, so a step
///   raced against a durable timeout (`select!` of a step and a `sleep`) is seen as soon as
///   it finishes. A cancellation, a failure or a lost lease ends the activation at once;
///   attempts still running are dropped and run again if the task goes on.
/// - A step's closure runs outside the task: a `#[step]` fn called inside it simply runs, as
///   part of the outer step's attempt. Calling this context from inside a step's closure fails
///   the task, with an error that names both the outer step and the inner call.
pub struct TaskContext {
    /// The machine knows the task's id too, but `task_id()` lends a `&str`, which the machine
    /// inside its `RefCell` cannot: this copy, made once, is never changed.
    task_id: String,
    machine: RefCell<Activation>,
    host: Host,
    pacer: Pacer,
    /// The compensations this run registered, in call order, under their keys.
    compensations: RefCell<Vec<(Decision<String>, Compensation)>>,
    /// How the host reaches other tasks (children), if it does.
    tasks: Option<Rc<dyn TaskRoute>>,
    /// The task's principal and listing, which its children share.
    principal: Option<String>,
    list_scope: Option<String>,
    /// The root of the task's tree, which its children name as theirs.
    root: String,
    /// How many awaits of the context's own (a yield to the host, a call to another task) are
    /// under way: the body may still go on by itself.
    busy: Cell<u32>,
    /// The operations waiting for new ground to be judged (see
    /// [`judge_deferred_ground`](Self::judge_deferred_ground)).
    deferred: RefCell<Vec<Waker>>,
}

/// A compensation's closure, its value serialised.
type Compensation = Box<dyn FnOnce() -> LocalBoxFuture<'static, Result<Value, StepError>>>;

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.task_id)
            .finish_non_exhaustive()
    }
}

pub(crate) struct ContextParts {
    pub journal: TaskState,
    pub host: Host,
    pub tasks: Option<Rc<dyn TaskRoute>>,
    pub retry: RetryPolicy,
    pub step_timeout: Duration,
    pub limits: Limits,
    /// When a new step attempt is no longer started in this activation.
    pub hand_off_at: Option<Timestamp>,
}

impl TaskContext {
    pub(crate) fn new(parts: ContextParts) -> Self {
        let pacer = Pacer::new(parts.host.clock.now());
        let settings = Settings {
            retry: parts.retry,
            step_timeout: parts.step_timeout,
            limits: parts.limits,
            hand_off_at: parts.hand_off_at,
        };
        TaskContext {
            task_id: parts.journal.task.task_id.clone(),
            principal: parts.journal.task.principal.clone(),
            list_scope: parts.journal.task.list_scope.clone(),
            root: parts.journal.task.root_id().to_owned(),
            tasks: parts.tasks,
            machine: RefCell::new(Activation::new(parts.journal, settings)),
            host: parts.host,
            pacer,
            compensations: RefCell::default(),
            busy: Cell::new(0),
            deferred: RefCell::default(),
        }
    }

    /// The id of this task.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// Who started the task (a child task: who started its parent): the principal it is
    /// bound to, the same on every activation. With MCP authorization it is
    /// `<issuer>#<subject>` of the access token that started it
    /// ([`Principal::binding`](crate::auth::Principal::binding)); with an
    /// [`authenticate`](crate::McpServer::authenticate) hook, what the hook returned; `None`
    /// for an anonymous caller.
    ///
    /// The caller's token itself never reaches the task: it expires long before many tasks
    /// end, and passing it on to another service would make this server a confused deputy.
    /// A step that calls an upstream API uses credentials of the server's own.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// A key for external deduplication of the side effect of the next `step` named `step`
    /// that this run calls: `"<task id>:<journal key>"`, the same on every attempt and replay.
    /// Call it just before the step; in a loop each occurrence gets its own (`<id>:send`,
    /// `<id>:send#2`, ...).
    pub fn idempotency_key(&self, step: &str) -> String {
        self.with(|m| m.idempotency_key(step))
    }

    /// Claims the journal key of the next occurrence of `name`, for an operation of kind
    /// `used_as`.
    pub(crate) fn claim(&self, name: &str, used_as: NameUse) -> Decision<String> {
        self.with(|m| m.claim(name, used_as))
    }

    /// Sleeps durably for `duration`; the task is unloaded meanwhile and resumes when the time
    /// comes, across restarts. A wake time past [`Timestamp::MAX`] (the latest every host can
    /// store) is that time.
    ///
    /// `duration` is a [`Duration`]: for a literal, `duration!("5s")`, checked at compile time
    /// (see [`duration!`](crate::duration)). A string read at run time is taken too (see
    /// [`IntoDelay`]); a malformed one fails the task at this sleep.
    pub fn sleep<'a>(
        &'a self,
        name: &str,
        duration: impl IntoDelay,
    ) -> LocalBoxFuture<'a, Result<(), TaskError>> {
        let key = self.claim(name, NameUse::Sleep);
        let duration = duration.into_delay();
        Box::pin(async move {
            let key = self.proceed(key).await;
            self.act(|m, now| m.sleep(&key, duration, now)).await;
            Ok(())
        })
    }

    /// Sleeps durably until `when` (milliseconds since the epoch; times past
    /// [`Timestamp::MAX`], the latest every host can store, wake at that time).
    pub fn sleep_until<'a>(
        &'a self,
        name: &str,
        when: Timestamp,
    ) -> LocalBoxFuture<'a, Result<(), TaskError>> {
        let key = self.claim(name, NameUse::Sleep);
        Box::pin(async move {
            let key = self.proceed(key).await;
            self.act(|m, now| m.sleep_until(&key, when, now)).await;
            Ok(())
        })
    }

    // ---- the shell ----

    /// How the activation ended, once it has (the driver asks after every poll of the body).
    pub(crate) fn end(&self) -> Option<End> {
        self.with(|m| m.end())
    }

    fn with<T>(&self, act: impl FnOnce(&mut Activation) -> T) -> T {
        act(&mut self.machine.borrow_mut())
    }

    fn now_on_host(&self) -> Timestamp {
        self.host.clock.now()
    }

    fn limits(&self) -> Limits {
        self.with(|m| *m.limits())
    }

    /// Asks the machine, sends the writes it decided to the store, and returns the decision to
    /// the body; parks the body if the machine or the store stopped it.
    async fn act<T>(&self, decide: impl FnOnce(&mut Activation, Timestamp) -> Decision<T>) -> T {
        let now = self.now_on_host();
        let decided = self.with(|m| decide(m, now));
        let flushed = self.flush().await;
        match (decided, flushed) {
            (Ok(value), Ok(())) => value,
            _ => parked().await,
        }
    }

    /// A decision made earlier (a key claimed at the call): its value, or the body stops.
    async fn proceed<T>(&self, decided: Decision<T>) -> T {
        match decided {
            Ok(value) => value,
            Err(Stop) => parked().await,
        }
    }

    /// Parks the body for a reason the machine has recorded.
    async fn stopped<T>(&self, _: Stop) -> T {
        parked().await
    }

    /// Stops the body because the store failed; the claim's redelivery runs it again.
    async fn store_failed<T>(&self, error: StoreError) -> T {
        self.stopped(self.with(|m| m.store_failed(error.0))).await
    }

    async fn fail<T>(&self, error: EngineError) -> T {
        self.stopped(self.with(|m| m.fail(error))).await
    }

    /// Applies the machine's queued writes under the activation's lease, and lets the host's
    /// other work run after a batch of them.
    async fn flush(&self) -> Decision<()> {
        let writes = self.with(Activation::take_writes);
        if writes.is_empty() {
            return Ok(());
        }
        let guard = self.with(|m| m.guard());
        let applied = self.host.store.apply(&self.task_id, guard, &writes);
        self.with(|m| m.committed(applied.map_err(|error| error.0)))?;
        if self.pacer.wrote() {
            self.while_busy(self.host.timer.yield_now()).await;
            self.pacer.yielded(self.now_on_host());
        }
        Ok(())
    }

    /// Awaits `future`, something of the context's own (not the body's), counted as busy: the
    /// body goes on by itself once it is done.
    async fn while_busy<T>(&self, future: impl Future<Output = T>) -> T {
        struct Busy<'a>(&'a Cell<u32>);
        impl Drop for Busy<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get() - 1);
            }
        }
        self.busy.set(self.busy.get() + 1);
        let _busy = Busy(&self.busy);
        future.await
    }

    // ---- new ground against the journal ----

    /// Before the operation under `key` breaks new ground while keys an earlier run recorded
    /// are not reached yet: waits until the body has paused, when the machine judges whether
    /// another branch reached them (the operation goes on) or the code no longer reaches them
    /// (the task fails, and the operation never runs). So a step renamed or moved behind new
    /// work under a task in flight fails the task before the new code's side effect.
    async fn new_ground(&self, key: &str) {
        if !self.with(|m| m.defers_new_ground(key)) {
            return;
        }
        poll_fn(|waker| {
            if self.with(|m| m.ground_deferred()) {
                self.deferred.borrow_mut().push(waker.waker().clone());
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await
    }

    /// After a poll that left the body pending: judges deferred new ground (see
    /// [`Activation::judge_deferred_ground`]) and wakes what waited for the judgement.
    pub(crate) fn judge_deferred_ground(&self) {
        let busy = self.busy.get() > 0;
        if self.with(|m| m.judge_deferred_ground(busy)) {
            for waker in self.deferred.take() {
                waker.wake();
            }
        }
    }

    /// Fails the task if its body returned without reaching every key an earlier run
    /// recorded (see [`Activation::fail_unreached_journal`]); `false` if it reached them all.
    pub(crate) fn fail_unreached_journal(&self) -> bool {
        self.with(Activation::fail_unreached_journal)
    }

    /// Fails the task if its body waits while rows it did not reach ask for a wake-up (see
    /// [`Activation::fail_stranded_journal`]); `false` if none does.
    pub(crate) fn fail_stranded_journal(&self) -> bool {
        self.with(Activation::fail_stranded_journal)
    }
}

/// The body is parked for good: the activation ends and its future is dropped.
async fn parked<T>() -> T {
    std::future::pending().await
}

fn parse_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// Serialises a `&dyn` value without making the callers generic.
trait ErasedSerialize {
    fn to_value(&self) -> Result<Value, serde_json::Error>;
}

impl<T: Serialize> ErasedSerialize for T {
    fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}
