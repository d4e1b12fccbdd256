//! The one generic task body: interprets a [`Program`](crate::program::Program) against the real
//! `TaskContext`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use durable_mcp::__private::{StepSpec, run_step};
use durable_mcp::LocalBoxFuture;
use durable_mcp::http::Timer;
use durable_mcp::testing::VirtualTimer;
use durable_mcp::{Backoff, RetryPolicy, Timestamp};
use durable_mcp::{ElicitOutcome, StepError, TaskContext, TaskDefinition, TaskError};
use futures_util::future::{join_all, try_join_all};
use serde_json::{Value, json};

use crate::program::{
    BODY_ERROR, Behaviour, CHILD, Child, DRAW, Draw, End, GATE_KEY, Keys, Op, RETRY_LIMIT, StepOp,
    gate_token, inner_value, nested_value, occurrence_key, step_token, step_value,
};
use crate::shared::Shared;

/// The registered name of the generic task.
pub const TASK_NAME: &str = "sim";

/// How long one attempt of a step that may time out may take.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a slow closure awaits the timer (within the timeout).
const SLOW: Duration = Duration::from_secs(2);

/// How long a closure that outlasts its timeout awaits.
const TOO_SLOW: Duration = Duration::from_secs(10);

/// The retry policy of every generated step.
pub fn policy() -> RetryPolicy {
    RetryPolicy {
        limit: RETRY_LIMIT,
        delay: Duration::from_secs(1),
        backoff: Backoff::Exponential,
        max_delay: Duration::from_secs(10),
        jitter: true,
    }
}

/// The text a planned panic (of a step closure or a body) carries; the sim's panic hook keeps
/// these quiet.
pub const PLANNED_PANIC: &str = "sim: a planned panic in a step closure";

/// The task definition whose body interprets each task's program from `shared`.
pub fn definition(shared: Rc<Shared>) -> TaskDefinition {
    TaskDefinition::new(TASK_NAME, move |cx, _input| {
        let shared = Rc::clone(&shared);
        Box::pin(async move { body(cx, shared).await })
    })
    .ttl(None)
    .retry(policy())
    .step_timeout(Duration::from_secs(30))
}

async fn body(cx: &TaskContext, shared: Rc<Shared>) -> Result<Value, TaskError> {
    let task = cx.task_id().to_owned();
    let Some(program) = shared.program(&task) else {
        return Err(TaskError::failed("the sim has no program for this task"));
    };
    let run = Run {
        cx,
        shared,
        task,
        keys: RefCell::default(),
        clock_readings: Cell::new(0),
        seed_recorded: Cell::new(None),
    };
    let tokens = run.ops(&program.ops).await;
    // What this run reached, for the check that a task completes only on its whole journal.
    let reached = run.keys.borrow().claimed().collect::<BTreeSet<String>>();
    run.shared.body_returned(&run.task, reached);
    match program.end {
        End::Return => Ok(json!({ "tokens": tokens })),
        End::Error => Err(TaskError::failed(BODY_ERROR)),
        End::Panic => panic!("{PLANNED_PANIC}"),
    }
}

struct Run<'a> {
    cx: &'a TaskContext,
    shared: Rc<Shared>,
    task: String,
    keys: RefCell<Keys>,
    /// How many `cx.now()` calls this run made: the context keys them `$now`, `$now#2`, ...
    clock_readings: Cell<u32>,
    /// Whether the task's random seed was durable when this run first drew: then every draw
    /// of the run replays, else the run drew from a seed of its own.
    seed_recorded: Cell<Option<bool>>,
}

type StepFuture = LocalBoxFuture<'static, Result<Value, StepError>>;

impl<'a> Run<'a> {
    fn claim(&self, name: &'static str) -> String {
        self.keys.borrow_mut().claim(name)
    }

    fn ops<'b>(&'b self, ops: &'b [Op]) -> LocalBoxFuture<'b, Vec<String>> {
        Box::pin(async move {
            let mut tokens = Vec::new();
            for op in ops {
                tokens.extend(self.op(op).await);
            }
            tokens
        })
    }

    /// A helper `async fn` of the body: its steps are the body's.
    async fn helper(&self, ops: &[Op]) -> Vec<String> {
        self.ops(ops).await
    }

    async fn op(&self, op: &Op) -> Vec<String> {
        match op {
            Op::Step(step) => vec![self.step(step).await],
            Op::Loop { step, count } => {
                let mut tokens = Vec::new();
                for _ in 0..*count {
                    tokens.push(self.step(step).await);
                }
                tokens
            }
            Op::Helper(ops) => self.helper(ops).await,
            Op::Nested { name, inner } => vec![self.nested(name, inner).await],
            Op::ExplicitNested { sleep } => vec![self.explicit_nested(*sleep).await],
            Op::JoinSteps(steps) => self.join_steps(steps).await,
            Op::JoinBranches(branches) => {
                let branches = branches
                    .iter()
                    .map(|branch| async move { Ok::<_, TaskError>(self.ops(branch).await) });
                match try_join_all(branches).await {
                    Ok(tokens) => tokens.into_iter().flatten().collect(),
                    Err(error) => vec![format!("join-error:{error}")],
                }
            }
            Op::Sleep { name, ms } => {
                let key = self.claim(name);
                let slept = self.cx.sleep(name, Duration::from_millis(*ms)).await;
                vec![self.slept(&key, slept)]
            }
            Op::SleepUntil { name, at } => {
                let key = self.claim(name);
                let slept = self.cx.sleep_until(name, Timestamp(*at)).await;
                vec![self.slept(&key, slept)]
            }
            Op::Elicit { name } => {
                let key = self.claim(name);
                let request = form(&key);
                let token = match self.cx.elicit(name, request).await {
                    Ok(response) => self.answer_token(&key, &response),
                    Err(error) => format!("elicit-error:{key}:{error}"),
                };
                self.shared.observe(&self.task, &key, &token);
                vec![token]
            }
            Op::ElicitTimeout { name, ms } => {
                let key = self.claim(name);
                let request = form(&key);
                let timeout = Duration::from_millis(*ms);
                let token = match self.cx.elicit(name, request).timeout(timeout).await {
                    Ok(ElicitOutcome::Answered(response)) => self.answer_token(&key, &response),
                    Ok(ElicitOutcome::TimedOut) => format!("timed-out:{key}"),
                    Err(error) => format!("elicit-error:{key}:{error}"),
                };
                self.shared.observe(&self.task, &key, &token);
                vec![token]
            }
            Op::Offer { key } => {
                // An offer claims its key like every other operation.
                let claimed = self.claim(key);
                match self.cx.offer(key, form(key)).await {
                    Ok(recorded) if recorded == claimed => {}
                    Ok(recorded) => self.shared.violate(
                        "offer-key",
                        &self.task,
                        format!("offer {key:?} was recorded under {recorded:?}, not {claimed:?}"),
                    ),
                    Err(error) => self.shared.violate(
                        "offer-failed",
                        &self.task,
                        format!("offer {key:?}: {error}"),
                    ),
                }
                Vec::new()
            }
            Op::Check { name, key: offer } => {
                let key = self.claim(name);
                let replay = self.shared.recorded(&self.task, &key);
                let token = match self.cx.check_input(name, offer).await {
                    Ok(Some(answer)) => {
                        let text = answer.to_string();
                        if !self.shared.was_sent(&self.task, offer, &text) {
                            self.shared.violate(
                                "unsent-answer",
                                &self.task,
                                format!(
                                    "check {key:?} of offer {offer:?} returned {text}, never sent"
                                ),
                            );
                        }
                        format!("check:{key}:{text}")
                    }
                    Ok(None) => format!("check:{key}:none"),
                    Err(error) => format!("check-error:{key}:{error}"),
                };
                if replay {
                    self.shared.observe(&self.task, &key, &token);
                } else {
                    self.shared.observe_first_read(&self.task, &key, &token);
                }
                vec![token]
            }
            Op::Draw(draw) => vec![self.draw(*draw)],
            Op::OnCancel {
                name,
                record,
                behaviour,
            } => {
                self.on_cancel(name, record, *behaviour);
                Vec::new()
            }
            Op::Children(children) => self.children(children).await,
            Op::Gated { id, new, old } => {
                let key = self.claim(GATE_KEY);
                let replay = self.shared.recorded(&self.task, &format!("$patch:{id}"));
                let patched = self.cx.patched(id);
                self.check_gate(id, patched);
                let token = gate_token(id, patched);
                if replay {
                    self.shared.observe(&self.task, &key, &token);
                } else {
                    self.shared.observe_first_read(&self.task, &key, &token);
                }
                let mut tokens = vec![token];
                tokens.extend(self.ops(if patched { new } else { old }).await);
                tokens
            }
            Op::Status { message, meta } => {
                let status = self.cx.status(message.clone());
                let published = match meta {
                    Some(meta) => status.meta(json!({ "i": meta })).await,
                    None => status.await,
                };
                if let Err(error) = published {
                    self.shared.violate(
                        "status-failed",
                        &self.task,
                        format!("status {message:?}: {error}"),
                    );
                }
                Vec::new()
            }
        }
    }

    /// Starts `children` in turn (each a task of the sim's own tool, whose program the world
    /// registered under the child's id), then waits for the joined ones together.
    async fn children(&self, children: &[Child]) -> Vec<String> {
        let mut joined = Vec::new();
        for child in children {
            let key = self.claim(CHILD);
            match self.cx.start_child(CHILD, TASK_NAME, json!({})).await {
                Ok(handle) if child.joined => joined.push((key, handle)),
                Ok(_) => {}
                Err(error) => self.shared.violate(
                    "child-start",
                    &self.task,
                    format!("the start of child {key:?} failed: {error}"),
                ),
            }
        }
        let results = join_all(joined.iter().map(|(_, handle)| handle.result())).await;
        joined
            .iter()
            .zip(results)
            .map(|((key, handle), result)| self.joined(key, handle.task_id(), result))
            .collect()
    }

    /// The token of a join of the child `child` (started under `key`) that returned `result`;
    /// checks it against how the child ended, and against what earlier runs saw.
    fn joined(&self, key: &str, child: &str, result: Result<Value, TaskError>) -> String {
        let token = match result {
            Ok(value) => format!("child:{key}:{value}"),
            Err(TaskError::ChildFailed { status, .. }) => format!("child-failed:{key}:{status}"),
            Err(other) => format!("child-error:{key}:{other}"),
        };
        self.shared.check_join(&self.task, key, child, &token);
        self.shared.observe(&self.task, key, &token);
        token
    }

    /// Registers a compensation whose closure checks that it runs only after a cancel, and
    /// that (as any step's) it runs once recorded never again and never twice at a time.
    fn on_cancel(&self, name: &str, record: &'static str, behaviour: Behaviour) {
        let key = self.claim(record);
        let shared = Rc::clone(&self.shared);
        let task = self.task.clone();
        self.cx.on_cancel(name, move || async move {
            let (count, _live) = shared.begin_execution(&task, &key);
            shared.compensation_starts(&task, &key);
            match behaviour {
                Behaviour::FailFirst(n) if count <= n => {
                    Err(StepError::retryable("planned failure"))
                }
                Behaviour::AlwaysFail => Err(StepError::retryable("planned failure")),
                _ => Ok(count),
            }
        });
    }

    /// Checks the side `patched(id)` took: the new one, unless a deploy changed the code under
    /// the task and the rules say otherwise (see [`crate::program::judge`]).
    fn check_gate(&self, id: &str, patched: bool) {
        let expected = self.shared.gate_expected(&self.task, id);
        if patched != expected {
            self.shared.violate(
                "patch-gate",
                &self.task,
                format!("patched({id:?}) was {patched}, the rules say {expected}"),
            );
        }
    }

    /// Draws a value, and checks it against what earlier runs saw: a value whose record was
    /// durable before the draw is what every run saw; one drawn afresh is what later runs see
    /// once its record is durable.
    fn draw(&self, draw: Draw) -> String {
        let key = self.claim(DRAW);
        let replay = match draw {
            Draw::Now => {
                self.clock_readings.set(self.clock_readings.get() + 1);
                let record = occurrence_key("$now", self.clock_readings.get());
                self.shared.recorded(&self.task, &record)
            }
            Draw::Random | Draw::Uuid => {
                let recorded = self
                    .seed_recorded
                    .get()
                    .unwrap_or_else(|| self.shared.recorded(&self.task, "$random"));
                self.seed_recorded.set(Some(recorded));
                recorded
            }
            Draw::Patched(id) => self.shared.recorded(&self.task, &format!("$patch:{id}")),
        };
        let token = match draw {
            Draw::Now => format!("now:{}", self.cx.now().as_millis()),
            Draw::Random => format!("random:{}", self.cx.random_u64()),
            Draw::Uuid => format!("uuid:{}", self.cx.uuid()),
            Draw::Patched(id) => {
                let patched = self.cx.patched(id);
                self.check_gate(id, patched);
                format!("patched:{id}:{patched}")
            }
        };
        if replay {
            self.shared.observe(&self.task, &key, &token);
        } else {
            self.shared.observe_first_read(&self.task, &key, &token);
        }
        token
    }

    fn slept(&self, key: &str, slept: Result<(), TaskError>) -> String {
        let token = match slept {
            Ok(()) => format!("slept:{key}"),
            Err(error) => format!("sleep-error:{key}:{error}"),
        };
        self.shared.observe(&self.task, key, &token);
        token
    }

    fn answer_token(&self, key: &str, response: &Value) -> String {
        let text = response.to_string();
        if !self.shared.was_sent(&self.task, key, &text) {
            self.shared.violate(
                "unsent-answer",
                &self.task,
                format!("elicitation {key:?} returned {text}, which was never sent"),
            );
        }
        format!("answer:{key}:{text}")
    }

    /// The closure of the step under `key`.
    fn closure(&self, key: &str, behaviour: Behaviour) -> impl FnOnce() -> StepFuture + 'static {
        let shared = Rc::clone(&self.shared);
        let task = self.task.clone();
        let key = key.to_owned();
        move || {
            Box::pin(async move {
                let (count, _live) = shared.begin_execution(&task, &key);
                let timer = VirtualTimer(Rc::clone(&shared.clock));
                let value = step_value(&task, &key);
                let early = |n: u32| count <= n;
                match behaviour {
                    Behaviour::Ok => Ok(value),
                    Behaviour::Slow => {
                        timer.delay(SLOW).await;
                        Ok(value)
                    }
                    Behaviour::FailFirst(n) if early(n) => {
                        Err(StepError::retryable("planned failure"))
                    }
                    Behaviour::AlwaysFail => Err(StepError::retryable("planned failure")),
                    Behaviour::NonRetryable => Err(StepError::non_retryable("planned refusal")),
                    Behaviour::PanicFirst(n) if early(n) => panic!("{PLANNED_PANIC}"),
                    Behaviour::AlwaysPanic => panic!("{PLANNED_PANIC}"),
                    Behaviour::TimeoutFirst(n) if early(n) => {
                        timer.delay(TOO_SLOW).await;
                        Ok(value)
                    }
                    Behaviour::AlwaysTimeout => {
                        timer.delay(TOO_SLOW).await;
                        Ok(value)
                    }
                    Behaviour::FailFirst(_)
                    | Behaviour::PanicFirst(_)
                    | Behaviour::TimeoutFirst(_) => Ok(value),
                }
            }) as StepFuture
        }
    }

    fn check_idempotency_key(&self, step: &StepOp, key: &str) {
        if !step.idempotency_key {
            return;
        }
        let got = self.cx.idempotency_key(step.name);
        let want = format!("{}:{key}", self.task);
        if got != want {
            self.shared.violate(
                "idempotency-key",
                &self.task,
                format!(
                    "idempotency_key({:?}) named {got:?}, the step gets {want:?}",
                    step.name
                ),
            );
        }
    }

    fn step_future(
        &self,
        step: &StepOp,
        key: &str,
    ) -> LocalBoxFuture<'a, Result<Value, TaskError>> {
        let closure = self.closure(key, step.behaviour);
        let timeout = step.behaviour.times_out().then_some(STEP_TIMEOUT);
        if step.via_macro {
            let spec = StepSpec {
                retry: Some(policy()),
                timeout,
            };
            // The call claims the key, as a `#[step]` fn's call does.
            let call = run_step(step.name, spec, std::convert::identity, closure);
            Box::pin(async move { call.await.map_err(TaskError::from) })
        } else {
            let mut call = self.cx.step(step.name, closure).retry(policy());
            if let Some(timeout) = timeout {
                call = call.timeout(timeout);
            }
            Box::pin(call)
        }
    }

    fn step_outcome(&self, step: &StepOp, key: &str, result: Result<Value, TaskError>) -> String {
        let token = match result {
            Ok(value) => value.to_string(),
            Err(TaskError::StepFailed { kind, .. }) => format!("err:{}:{key}", kind.as_str()),
            Err(other) => format!("error:{key}:{other}"),
        };
        let expected = step_token(&self.task, key, step.behaviour);
        if token != expected {
            self.shared.violate(
                "step-outcome",
                &self.task,
                format!("step {key:?} returned {token}, the model says {expected}"),
            );
        }
        self.shared.observe(&self.task, key, &token);
        token
    }

    async fn step(&self, step: &StepOp) -> String {
        let key = self.claim(step.name);
        self.check_idempotency_key(step, &key);
        let result = self.step_future(step, &key).await;
        self.step_outcome(step, &key, result)
    }

    async fn join_steps(&self, steps: &[StepOp]) -> Vec<String> {
        // Every future is created (and its key claimed) in iterator order before any is
        // polled.
        let calls: Vec<_> = steps
            .iter()
            .map(|step| {
                let key = self.claim(step.name);
                self.check_idempotency_key(step, &key);
                let future = self.step_future(step, &key);
                async move { Ok::<_, TaskError>((key, future.await)) }
            })
            .collect();
        match try_join_all(calls).await {
            Ok(results) => steps
                .iter()
                .zip(results)
                .map(|(step, (key, result))| self.step_outcome(step, &key, result))
                .collect(),
            Err(error) => vec![format!("join-error:{error}")],
        }
    }

    async fn nested(&self, name: &'static str, inner: &[&'static str]) -> String {
        let key = self.claim(name);
        let shared = Rc::clone(&self.shared);
        let task = self.task.clone();
        let outer = key.clone();
        let inner_names = inner.to_vec();
        let closure = move || async move {
            let (_count, _live) = shared.begin_execution(&task, &outer);
            let mut values = Vec::new();
            for (index, inner_name) in inner_names.iter().enumerate() {
                let value = inner_value(&task, &outer, inner_name, index);
                let spec = StepSpec::default();
                let got = run_step(
                    inner_name,
                    spec,
                    std::convert::identity,
                    move || async move { Ok::<_, StepError>(value) },
                );
                values.push(got.await?);
            }
            let mut value = step_value(&task, &outer);
            value["inner"] = Value::Array(values);
            Ok::<_, StepError>(value)
        };
        let token = match self.cx.step(name, closure).retry(policy()).await {
            Ok(value) => value.to_string(),
            Err(error) => format!("error:{key}:{error}"),
        };
        let expected = nested_value(&self.task, &key, inner).to_string();
        if token != expected {
            self.shared.violate(
                "step-outcome",
                &self.task,
                format!("nested step {key:?} returned {token}, the model says {expected}"),
            );
        }
        self.shared.observe(&self.task, &key, &token);
        token
    }

    async fn explicit_nested(&self, sleep: bool) -> String {
        let key = self.claim("bad_outer");
        let cx = self.cx;
        let shared = Rc::clone(&self.shared);
        let task = self.task.clone();
        let outer = key.clone();
        let closure = move || async move {
            let (_count, _live) = shared.begin_execution(&task, &outer);
            if sleep {
                cx.sleep("bad_inner", Duration::from_secs(1))
                    .await
                    .map_err(StepError::non_retryable)?;
                return Ok(json!(1));
            }
            let inner = cx.step("bad_inner", || async { Ok::<_, StepError>(json!(1)) });
            inner.await.map_err(StepError::non_retryable)
        };
        match cx.step("bad_outer", closure).retry(policy()).await {
            Ok(value) => format!("explicit-nested:{key}:{value}"),
            Err(error) => format!("explicit-nested-error:{key}:{error}"),
        }
    }
}

/// The elicitation a generated body asks under `key`: a form with one yes/no field.
fn form(key: &str) -> serde_json::Value {
    json!({
        "mode": "form",
        "message": key,
        "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } },
    })
}
