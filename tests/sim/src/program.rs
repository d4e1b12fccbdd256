//! The grammar of generated task bodies, its generator, and the model: what a body of the
//! grammar returns when nothing goes wrong around it.
//!
//! Step values are a pure function of the task id and the step's journal key, and every
//! failure outcome is deterministic (a step failing fewer times than its retry limit always
//! ends ok; a non-retryable or always-failing one always fails), so the model needs to be told
//! only what the outside world decided: the answers the body saw.

use std::collections::{BTreeMap, BTreeSet};

use durable_mcp::__internals::child_task_id;
use durable_mcp::store::ChildOutcome;
use serde_json::{Value, json};

use crate::rng::{Rng, hash};

/// How many attempts every generated step may take (its retry limit).
pub const RETRY_LIMIT: u32 = 3;

/// How one step's closure behaves, by how often it has run for its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Returns its value at once.
    Ok,
    /// Awaits the virtual timer for a while (less than the step timeout), then returns.
    Slow,
    /// Fails (retryably) its first `n` executions, `n` below the retry limit.
    FailFirst(u32),
    /// Fails with a non-retryable error.
    NonRetryable,
    /// Panics in its first `n` executions.
    PanicFirst(u32),
    /// Outlasts the step timeout in its first `n` executions.
    TimeoutFirst(u32),
    /// Always fails retryably.
    AlwaysFail,
    /// Always panics.
    AlwaysPanic,
    /// Always outlasts the step timeout.
    AlwaysTimeout,
}

impl Behaviour {
    /// The failure kind the step ends with (as `StepFailureKind::as_str`), or `None` if it
    /// ends with its value.
    pub fn failure(self) -> Option<&'static str> {
        match self {
            Behaviour::NonRetryable => Some("non_retryable"),
            Behaviour::AlwaysFail | Behaviour::AlwaysPanic => Some("attempts_exhausted"),
            Behaviour::AlwaysTimeout => Some("timed_out"),
            _ => None,
        }
    }

    /// Whether the step may fail an attempt and wait for a retry.
    pub fn retries(self) -> bool {
        !matches!(
            self,
            Behaviour::Ok | Behaviour::Slow | Behaviour::NonRetryable
        )
    }

    /// Whether the step needs a short per-attempt timeout.
    pub fn times_out(self) -> bool {
        matches!(self, Behaviour::TimeoutFirst(_) | Behaviour::AlwaysTimeout)
    }

    fn generate(rng: &mut Rng) -> Behaviour {
        let n = rng.range(1, u64::from(RETRY_LIMIT) - 1) as u32;
        match rng.below(100) {
            0..40 => Behaviour::Ok,
            40..52 => Behaviour::Slow,
            52..64 => Behaviour::FailFirst(n),
            64..70 => Behaviour::NonRetryable,
            70..76 => Behaviour::PanicFirst(n),
            76..84 => Behaviour::TimeoutFirst(n),
            84..90 => Behaviour::AlwaysFail,
            90..95 => Behaviour::AlwaysPanic,
            _ => Behaviour::AlwaysTimeout,
        }
    }
}

/// One journaled step call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepOp {
    /// The step's name.
    pub name: &'static str,
    /// How its closure behaves.
    pub behaviour: Behaviour,
    /// Ask `cx.idempotency_key(name)` first and check it names the key the step gets.
    pub idempotency_key: bool,
    /// Call it as a `#[step]` fn does (`__private::run_step`) instead of `cx.step`.
    pub via_macro: bool,
}

/// One operation of a generated body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A step.
    Step(StepOp),
    /// The same step `count` times in a loop (keys `name`, `name#2`, ...).
    Loop {
        /// The repeated step.
        step: StepOp,
        /// How many times.
        count: u32,
    },
    /// Operations run by a helper `async fn`.
    Helper(Vec<Op>),
    /// A step whose closure awaits `#[step]` fns (`inner`): they are part of its attempt.
    Nested {
        /// The outer step's name.
        name: &'static str,
        /// The names of the `#[step]` fns awaited inside it.
        inner: Vec<&'static str>,
    },
    /// A step whose closure calls `cx.step` (or, with `sleep`, `cx.sleep`) on the task's own
    /// context: the task must fail with a named engine error.
    ExplicitNested {
        /// Call `cx.sleep` instead of `cx.step`.
        sleep: bool,
    },
    /// `try_join_all` of steps created in iterator order, all with one name.
    JoinSteps(Vec<StepOp>),
    /// `try_join_all` of branches, each a sequence of operations with names of its own.
    JoinBranches(Vec<Vec<Op>>),
    /// `cx.sleep(name, ms)`.
    Sleep {
        /// The sleep's name.
        name: &'static str,
        /// How long, in milliseconds.
        ms: u64,
    },
    /// `cx.sleep_until(name, at)`.
    SleepUntil {
        /// The sleep's name.
        name: &'static str,
        /// Milliseconds since the epoch (at times far beyond what a host can hold).
        at: u64,
    },
    /// `cx.elicit(name, ..)`.
    Elicit {
        /// The elicitation's name.
        name: &'static str,
    },
    /// `cx.elicit(name, ..).timeout(ms)`.
    ElicitTimeout {
        /// The elicitation's name.
        name: &'static str,
        /// The timeout, in milliseconds.
        ms: u64,
    },
    /// `cx.offer(key, ..)`.
    Offer {
        /// The offer's key.
        key: &'static str,
    },
    /// `cx.check_input(name, key)`.
    Check {
        /// The check's name.
        name: &'static str,
        /// The offer it reads.
        key: &'static str,
    },
    /// `cx.on_cancel(name, ..)`: a compensation that behaves as `behaviour` says (its key is
    /// `$cleanup:<name>`, numbered by occurrence like a step's).
    OnCancel {
        /// Its name.
        name: &'static str,
        /// Its key's name, as the sim claims it.
        record: &'static str,
        /// How its closure behaves: `Ok`, `FailFirst(1)` or `AlwaysFail`.
        behaviour: Behaviour,
    },
    /// A value the context records: `cx.now()`, `cx.random_u64()`, `cx.uuid()` or
    /// `cx.patched(id)`. Generated only where the body runs one branch at a time.
    Draw(Draw),
    /// `cx.status(message)` or, with `meta`, `cx.status(message).meta({"i": meta})`.
    Status {
        /// The message.
        message: String,
        /// The meta object's number.
        meta: Option<u64>,
    },
    /// `cx.start_child` of each child in turn (keys [`CHILD`], `kid#2`, ...), then
    /// `join_all` of the joined ones' `result()`. Generated only at a body's top level, so
    /// that the keys, hence the children's ids, follow the order of the ops (see [`family`]).
    Children(Vec<Child>),
    /// `if cx.patched(id) { new } else { old }`: a change deployed behind a patch gate (only
    /// in a body deployed under tasks in flight, see [`Deploy`]).
    Gated {
        /// The gate's id.
        id: &'static str,
        /// What the code runs now.
        new: Vec<Op>,
        /// What the code ran before the change.
        old: Vec<Op>,
    },
}

/// A child task an [`Op::Children`] starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// Its body.
    pub program: Program,
    /// The parent waits for it; else the child runs on by itself, past the parent's end.
    pub joined: bool,
}

/// What an [`Op::Draw`] draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    /// `cx.now()`.
    Now,
    /// `cx.random_u64()`.
    Random,
    /// `cx.uuid()`.
    Uuid,
    /// `cx.patched(id)`: `true` unless a deploy changed the code under the task (see
    /// [`judge`]).
    Patched(&'static str),
}

/// The sim's own key of every draw, claimed in call order like a journal key.
pub const DRAW: &str = "draw";

/// The compensations a body may register, with the names their keys are claimed under.
const CLEANUPS: [(&str, &str); 2] = [("undo_a", "$cleanup:undo_a"), ("undo_b", "$cleanup:undo_b")];

/// The name every child start claims its key under.
pub const CHILD: &str = "kid";

/// How deep children nest: a root's children may start children, those may not (two levels
/// are enough for a cancel to cascade through a task that is both parent and child).
const MAX_DEPTH: u32 = 2;

/// The ids of the patch gates a body may pass.
const PATCH_IDS: [&str; 2] = ["p1", "p2"];

/// A generated task body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// Its operations, in order.
    pub ops: Vec<Op>,
    /// How the body ends after them.
    pub end: End,
}

/// How a body ends once its operations ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Returns `{"tokens": [...]}`.
    Return,
    /// Returns an error: the task completes with a tool error.
    Error,
    /// Panics: the task completes with a tool error naming the panic.
    Panic,
}

/// The message of a body that ends with [`End::Error`].
pub const BODY_ERROR: &str = "sim: the body gives up";

const STEP_NAMES: [&str; 4] = ["fetch", "send", "load", "save"];
/// Names of `#[step]` fns: awaited in the body, or inside another step's closure.
const MACRO_NAMES: [&str; 2] = ["inner_a", "inner_b"];
const SLEEP_NAMES: [&str; 2] = ["nap", "rest"];
const ELICIT_NAMES: [&str; 2] = ["ask", "confirm"];
const OFFER_KEYS: [&str; 2] = ["note", "hint"];
const JOIN_NAMES: [&str; 3] = ["j0", "j1", "j2"];
const BRANCH_NAMES: [[&str; 3]; 3] = [
    ["b0a", "b0b", "b0c"],
    ["b1a", "b1b", "b1c"],
    ["b2a", "b2b", "b2c"],
];
const BRANCH_SLEEPS: [&str; 3] = ["b0s", "b1s", "b2s"];
const BRANCH_ELICITS: [&str; 3] = ["b0e", "b1e", "b2e"];

/// A time far beyond what every host can hold (2^60 ms), for `sleep_until`.
pub const FAR_FUTURE: u64 = 1 << 60;

/// What the generator may produce.
#[derive(Clone, Copy, Debug)]
pub struct Grammar {
    /// Generate a `cx.step` inside a step closure (the task must fail).
    pub explicit_nested: bool,
    /// Generate `#[step]` fns awaited inside a step's closure.
    pub nested: bool,
    /// Generate `try_join_all` of steps and of branches.
    pub joins: bool,
    /// Generate `sleep_until` far beyond what a host can hold.
    pub far_future: bool,
    /// Generate offers and checks.
    pub offers: bool,
    /// Generate draws of time, randomness and patch gates.
    pub draws: bool,
    /// Generate compensations.
    pub cleanups: bool,
    /// Generate child tasks.
    pub children: bool,
    /// Generate the race of a cancel and an answer recorded before the next activation.
    pub races: bool,
    /// Generate deploys of a changed body under tasks in flight.
    pub deploys: bool,
}

impl Grammar {
    /// Everything.
    pub const FULL: Grammar = Grammar {
        explicit_nested: true,
        nested: true,
        joins: true,
        far_future: true,
        offers: true,
        draws: true,
        cleanups: true,
        children: true,
        races: true,
        deploys: true,
    };

    /// The grammar without the constructs named in `names` (comma-separated: `explicit`,
    /// `nested`, `joins`, `far`, `offers`, `draws`, `cleanups`, `children`, `races`,
    /// `deploys`); `None` for an unknown name.
    pub fn without(names: &str) -> Option<Grammar> {
        let mut grammar = Grammar::FULL;
        for name in names.split(',').filter(|n| !n.is_empty()) {
            match name {
                "explicit" => grammar.explicit_nested = false,
                "nested" => grammar.nested = false,
                "joins" => grammar.joins = false,
                "far" => grammar.far_future = false,
                "offers" => grammar.offers = false,
                "draws" => grammar.draws = false,
                "cleanups" => grammar.cleanups = false,
                "children" => grammar.children = false,
                "races" => grammar.races = false,
                "deploys" => grammar.deploys = false,
                _ => return None,
            }
        }
        Some(grammar)
    }
}

impl Program {
    /// A random body.
    pub fn generate(rng: &mut Rng, grammar: Grammar, epoch_ms: u64) -> Program {
        let count = rng.range(2, 8);
        let ops = generate_ops(rng, grammar, epoch_ms, count, 0);
        let end = match rng.below(100) {
            0..4 => End::Error,
            4..7 => End::Panic,
            _ => End::Return,
        };
        Program { ops, end }
    }
}

/// `count` random operations of a body `depth` levels below a root.
fn generate_ops(rng: &mut Rng, grammar: Grammar, epoch_ms: u64, count: u64, depth: u32) -> Vec<Op> {
    let mut joins = 0;
    let mut offered: Vec<&'static str> = Vec::new();
    (0..count)
        .map(|_| {
            // Decided first, and only where children may be, so that a grammar without them
            // draws what it drew before they existed (a seed keeps its scenario).
            if grammar.children && depth < MAX_DEPTH && rng.chance(8) {
                let width = rng.range(1, 3);
                let children = (0..width)
                    .map(|_| generate_child(rng, grammar, epoch_ms, depth + 1))
                    .collect();
                return Op::Children(children);
            }
            match generate_op(rng, grammar, epoch_ms, &mut joins) {
                op if grammar.draws && rng.chance(15) => Op::Draw(draw(rng, op)),
                _ if grammar.cleanups && rng.chance(12) => {
                    let (name, record) = rng.pick(&CLEANUPS);
                    let behaviour = match rng.below(10) {
                        0..7 => Behaviour::Ok,
                        7..9 => Behaviour::FailFirst(1),
                        _ => Behaviour::AlwaysFail,
                    };
                    Op::OnCancel {
                        name,
                        record,
                        behaviour,
                    }
                }
                // A check reads an offer made before it (else the task fails by design).
                Op::Check { key, .. } if !offered.contains(&key) => {
                    offered.push(key);
                    Op::Offer { key }
                }
                Op::Offer { key } => {
                    offered.push(key);
                    Op::Offer { key }
                }
                op => op,
            }
        })
        .collect()
}

/// A child `depth` levels below a root: a short body of the same grammar that ends with a tool
/// error, or fails (a step inside a step), more often than a root does, so that parents see
/// every way a child ends.
fn generate_child(rng: &mut Rng, grammar: Grammar, epoch_ms: u64, depth: u32) -> Child {
    let count = rng.range(1, 3);
    let mut ops = generate_ops(rng, grammar, epoch_ms, count, depth);
    if grammar.explicit_nested && rng.chance(8) {
        ops.push(Op::ExplicitNested {
            sleep: rng.chance(50),
        });
    }
    let end = match rng.below(100) {
        0..10 => End::Error,
        10..15 => End::Panic,
        _ => End::Return,
    };
    Child {
        program: Program { ops, end },
        joined: rng.chance(85),
    }
}

/// A draw in place of `replaced` (which is dropped, keeping the generator's other choices).
fn draw(rng: &mut Rng, _replaced: Op) -> Draw {
    match rng.below(4) {
        0 => Draw::Now,
        1 => Draw::Random,
        2 => Draw::Uuid,
        _ => Draw::Patched(rng.pick(&PATCH_IDS)),
    }
}

fn step_op(rng: &mut Rng, name: &'static str) -> StepOp {
    StepOp {
        name,
        behaviour: Behaviour::generate(rng),
        idempotency_key: rng.chance(25),
        via_macro: false,
    }
}

fn simple_op(rng: &mut Rng) -> Op {
    if rng.chance(75) {
        let name = rng.pick(&STEP_NAMES);
        Op::Step(step_op(rng, name))
    } else {
        Op::Sleep {
            name: rng.pick(&SLEEP_NAMES),
            ms: rng.range(1, 30) * 1000,
        }
    }
}

fn generate_op(rng: &mut Rng, grammar: Grammar, epoch_ms: u64, joins: &mut usize) -> Op {
    match rng.below(100) {
        0..25 => {
            let name = rng.pick(&STEP_NAMES);
            Op::Step(step_op(rng, name))
        }
        25..32 => {
            let name = rng.pick(&MACRO_NAMES);
            let mut step = step_op(rng, name);
            step.via_macro = true;
            Op::Step(step)
        }
        32..39 => {
            let name = rng.pick(&STEP_NAMES);
            Op::Loop {
                step: step_op(rng, name),
                count: rng.range(2, 4) as u32,
            }
        }
        39..44 => {
            let count = rng.range(1, 3);
            Op::Helper((0..count).map(|_| simple_op(rng)).collect())
        }
        44..50 if grammar.nested => {
            let count = rng.range(1, 2);
            Op::Nested {
                name: "outer",
                inner: (0..count).map(|_| rng.pick(&MACRO_NAMES)).collect(),
            }
        }
        50..60 if grammar.joins && *joins < JOIN_NAMES.len() => {
            let join = *joins;
            *joins += 1;
            let width = rng.range(2, 3) as usize;
            if rng.chance(40) {
                let name = JOIN_NAMES[join];
                Op::JoinSteps((0..width).map(|_| step_op(rng, name)).collect())
            } else {
                // Branch names are unique to the branch (and the join: at most one join of
                // branches is generated per body, so they stay apart).
                *joins = JOIN_NAMES.len();
                let branches = (0..width)
                    .map(|b| {
                        let len = rng.range(1, 3) as usize;
                        (0..len)
                            .map(|i| {
                                let roll = rng.below(100);
                                if i > 0 && roll < 20 {
                                    Op::Sleep {
                                        name: BRANCH_SLEEPS[b],
                                        ms: rng.range(1, 20) * 1000,
                                    }
                                } else if i > 0 && roll < 30 {
                                    Op::ElicitTimeout {
                                        name: BRANCH_ELICITS[b],
                                        ms: rng.range(5, 60) * 1000,
                                    }
                                } else {
                                    Op::Step(step_op(rng, BRANCH_NAMES[b][i]))
                                }
                            })
                            .collect()
                    })
                    .collect();
                Op::JoinBranches(branches)
            }
        }
        50..68 => Op::Sleep {
            name: rng.pick(&SLEEP_NAMES),
            ms: rng.range(1, 60) * 1000,
        },
        68..71 => Op::SleepUntil {
            name: rng.pick(&SLEEP_NAMES),
            at: if rng.chance(30) && grammar.far_future {
                FAR_FUTURE
            } else {
                epoch_ms + rng.range(0, 600) * 1000
            },
        },
        71..77 => Op::Elicit {
            name: rng.pick(&ELICIT_NAMES),
        },
        77..82 => Op::ElicitTimeout {
            name: rng.pick(&ELICIT_NAMES),
            ms: rng.range(5, 120) * 1000,
        },
        82..87 if grammar.offers => Op::Offer {
            key: rng.pick(&OFFER_KEYS),
        },
        87..92 if grammar.offers => Op::Check {
            name: "peek",
            key: rng.pick(&OFFER_KEYS),
        },
        92..99 => Op::Status {
            message: format!("status {}", rng.below(1000)),
            meta: rng.chance(50).then(|| rng.below(1000)),
        },
        99 if grammar.explicit_nested => Op::ExplicitNested {
            sleep: rng.chance(50),
        },
        _ => Op::Step(step_op(rng, STEP_NAMES[0])),
    }
}

/// The journal key of occurrence `count` (from 1) of `name`.
pub fn occurrence_key(name: &str, count: u32) -> String {
    if count == 1 {
        name.to_owned()
    } else {
        format!("{name}#{count}")
    }
}

/// Logical journal keys, claimed in call order: one counter per name, whatever the kind.
#[derive(Debug, Default)]
pub struct Keys(BTreeMap<&'static str, u32>);

impl Keys {
    /// The key the next call of `name` gets.
    pub fn claim(&mut self, name: &'static str) -> String {
        let count = self.0.entry(name).or_insert(0);
        *count += 1;
        occurrence_key(name, *count)
    }

    /// Every key claimed so far.
    pub fn claimed(&self) -> impl Iterator<Item = String> + '_ {
        self.0
            .iter()
            .flat_map(|(name, count)| (1..=*count).map(|n| occurrence_key(name, n)))
    }
}

/// The value of the step under `key` in task `task`.
pub fn step_value(task: &str, key: &str) -> Value {
    json!({ "key": key, "v": hash(&[task, key]) % 1_000_000 })
}

/// The value of the `index`-th `#[step]` fn `name` awaited inside the step under `outer`.
pub fn inner_value(task: &str, outer: &str, name: &str, index: usize) -> Value {
    json!(hash(&[task, outer, name, &index.to_string()]) % 1_000_000)
}

/// The value of a nested step (its own value with its inner values).
pub fn nested_value(task: &str, key: &str, inner: &[&str]) -> Value {
    let inner: Vec<Value> = inner
        .iter()
        .enumerate()
        .map(|(i, name)| inner_value(task, key, name, i))
        .collect();
    json!({ "key": key, "v": hash(&[task, key]) % 1_000_000, "inner": inner })
}

/// The token a step's outcome adds to the body's result.
pub fn step_token(task: &str, key: &str, behaviour: Behaviour) -> String {
    match behaviour.failure() {
        Some(kind) => format!("err:{kind}:{key}"),
        None => step_value(task, key).to_string(),
    }
}

/// A task of a run: a root a client creates, or a child a body starts.
#[derive(Clone, Debug)]
pub struct Member {
    /// Its id.
    pub id: String,
    /// The task that starts it; `None` for a root.
    pub parent: Option<String>,
    /// Its body.
    pub program: Program,
}

/// Task `id` of `program` (started by `parent`), then every task its body may start,
/// depth-first. A child's id derives from its parent's id and its start's key: [`CHILD`]
/// numbered in the order of the body's top-level ops, where the generator keeps children.
pub fn family(id: String, parent: Option<String>, program: &Program) -> Vec<Member> {
    let mut keys = Keys::default();
    let mut children = Vec::new();
    for op in &program.ops {
        let Op::Children(started) = op else {
            continue;
        };
        for child in started {
            let key = keys.claim(CHILD);
            let child_id = child_task_id(&id, &key);
            children.extend(family(child_id, Some(id.clone()), &child.program));
        }
    }
    let root = Member {
        id,
        parent,
        program: program.clone(),
    };
    std::iter::once(root).chain(children).collect()
}

/// The token a join of the child started under `key` adds to the body's result, the child
/// having ended with `outcome`: its result, or else the status `ChildFailed` names (a tool
/// error is `completed`, a refused start `failed`).
pub fn child_token(key: &str, outcome: &ChildOutcome) -> String {
    let status = match outcome {
        ChildOutcome::Completed { result } if result.get("isError") != Some(&json!(true)) => {
            return format!("child:{key}:{result}");
        }
        ChildOutcome::Completed { .. } => "completed",
        ChildOutcome::Failed { .. } | ChildOutcome::Refused { .. } => "failed",
        ChildOutcome::Cancelled => "cancelled",
    };
    format!("child-failed:{key}:{status}")
}

/// How a task of a program ends when nothing goes wrong around it.
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    /// The body's result (`{"tokens": [...]}`), or `None` if the task must fail.
    pub result: Option<Value>,
    /// The last status message the body published.
    pub status_message: Option<String>,
    /// The last meta object the body published.
    pub status_meta: Option<Value>,
}

/// Runs `program` for task `task` in the model: `seen` holds what the body saw for the
/// operations whose outcome the outside world decides (elicitations, checks), by key, and
/// `ended` how each child that ended did, by task id. Fails with the first such key the body
/// never saw, or the key of the first joined child that has not ended.
pub fn model(
    task: &str,
    program: &Program,
    seen: &BTreeMap<String, String>,
    ended: &BTreeMap<String, ChildOutcome>,
) -> Result<Expected, String> {
    let mut model = Model {
        task,
        seen,
        ended,
        keys: Keys::default(),
        tokens: Vec::new(),
        status_message: None,
        status_meta: None,
        fails: false,
    };
    model.ops(&program.ops)?;
    let result = match program.end {
        End::Return => json!({ "tokens": model.tokens }),
        End::Error => durable_mcp::__internals::tool_error_result(BODY_ERROR),
        End::Panic => durable_mcp::__internals::tool_error_result(&format!(
            "the task body panicked: {}",
            crate::body::PLANNED_PANIC
        )),
    };
    Ok(Expected {
        result: (!model.fails).then_some(result),
        status_message: model.status_message,
        status_meta: model.status_meta,
    })
}

struct Model<'a> {
    task: &'a str,
    seen: &'a BTreeMap<String, String>,
    ended: &'a BTreeMap<String, ChildOutcome>,
    keys: Keys,
    tokens: Vec<String>,
    status_message: Option<String>,
    status_meta: Option<Value>,
    fails: bool,
}

impl Model<'_> {
    fn ops(&mut self, ops: &[Op]) -> Result<(), String> {
        for op in ops {
            if self.fails {
                return Ok(());
            }
            self.op(op)?;
        }
        Ok(())
    }

    fn seen(&self, key: &str) -> Result<String, String> {
        self.seen.get(key).cloned().ok_or_else(|| key.to_owned())
    }

    fn op(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Step(step) => {
                let key = self.keys.claim(step.name);
                self.tokens
                    .push(step_token(self.task, &key, step.behaviour));
            }
            Op::Loop { step, count } => {
                for _ in 0..*count {
                    let key = self.keys.claim(step.name);
                    self.tokens
                        .push(step_token(self.task, &key, step.behaviour));
                }
            }
            Op::Helper(ops) => self.ops(ops)?,
            Op::Nested { name, inner } => {
                let key = self.keys.claim(name);
                self.tokens
                    .push(nested_value(self.task, &key, inner).to_string());
            }
            Op::ExplicitNested { .. } => self.fails = true,
            Op::JoinSteps(steps) => {
                for step in steps {
                    let key = self.keys.claim(step.name);
                    self.tokens
                        .push(step_token(self.task, &key, step.behaviour));
                }
            }
            Op::JoinBranches(branches) => {
                for branch in branches {
                    self.ops(branch)?;
                }
            }
            Op::Sleep { name, .. } | Op::SleepUntil { name, .. } => {
                let key = self.keys.claim(name);
                self.tokens.push(format!("slept:{key}"));
            }
            Op::Elicit { name } | Op::ElicitTimeout { name, .. } | Op::Check { name, .. } => {
                let key = self.keys.claim(name);
                self.tokens.push(self.seen(&key)?);
            }
            Op::Offer { key } => {
                // An offer claims its key like every other operation; it adds no token.
                self.keys.claim(key);
            }
            Op::OnCancel { .. } => {}
            Op::Draw(Draw::Patched(id)) => {
                // The side the body saw (checked against the rules as it is seen), else the
                // side of code that never changed.
                let key = self.keys.claim(DRAW);
                let token = self.seen.get(&key).cloned();
                self.tokens
                    .push(token.unwrap_or_else(|| format!("patched:{id}:true")));
            }
            Op::Gated { id, new, old } => {
                let key = self.keys.claim(GATE_KEY);
                let token = self.seen(&key)?;
                let patched = token == gate_token(id, true);
                self.tokens.push(token);
                self.ops(if patched { new } else { old })?;
            }
            Op::Draw(_) => {
                let key = self.keys.claim(DRAW);
                self.tokens.push(self.seen(&key)?);
            }
            Op::Status { message, meta } => {
                self.status_message = Some(message.clone());
                if let Some(meta) = meta {
                    self.status_meta = Some(json!({ "i": meta }));
                }
            }
            Op::Children(children) => {
                for child in children {
                    let key = self.keys.claim(CHILD);
                    if !child.joined {
                        continue;
                    }
                    let end = self.ended.get(&child_task_id(self.task, &key));
                    let end = end.ok_or_else(|| key.clone())?;
                    self.tokens.push(child_token(&key, end));
                }
            }
        }
        Ok(())
    }
}

// ---- races and deploys ----

/// The sim's own key of a [`Op::Gated`] gate's side, claimed in call order like a journal key.
pub const GATE_KEY: &str = "gate";

/// The token a gate of `id` adds to the body's result, on `side`.
pub fn gate_token(id: &str, side: bool) -> String {
    format!("gate:{id}:{side}")
}

/// The step a deploy changes: a name no other op uses, so that the change moves no other key.
pub const TARGET: &str = "target";
/// The name [`Change::Rename`] gives it.
pub const RENAMED: &str = "renamed";
/// The new step [`Change::MoveBehindWork`] puts in front of it.
pub const ADDED: &str = "added";
/// The id of the patch gate a gated change stands behind.
pub const DEPLOY_GATE: &str = "deploy";
/// Whether the step a deploy changes may fail and wait for a retry. Off: the engine fails a
/// task whose body waits while a row it did not reach asks for a wake-up (a retry), with
/// `Divergence::Waited` (before, the retry ticked the task over and over until the new code's
/// own wait ended), and [`judge`] does not predict that refusal yet: switched on, the
/// `deploy-outcome` check reports those refusals as unexpected. The harness test
/// `a_retrying_step_the_new_code_waits_before_fails_the_task` covers it.
pub const TARGET_RETRIES: bool = false;

/// How a deploy changes the step [`TARGET`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Renamed to [`RENAMED`].
    Rename,
    /// Removed.
    Remove,
    /// Moved to the body's end, behind a new step [`ADDED`].
    MoveBehindWork,
    /// Moved behind the first wait (a sleep or an elicitation) that followed it.
    MoveBehindWait,
}

impl Change {
    /// Every change, in the order the figures count them.
    pub const ALL: [Change; 4] = [
        Change::Rename,
        Change::Remove,
        Change::MoveBehindWork,
        Change::MoveBehindWait,
    ];

    /// The change's place in [`Change::ALL`].
    pub fn index(self) -> usize {
        Change::ALL.iter().position(|c| *c == self).unwrap_or(0)
    }
}

/// A changed body of root `t0`, deployed by [`crate::Event::Deploy`] under whatever is in
/// flight then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deploy {
    /// What changed.
    pub change: Change,
    /// The change stands behind `cx.patched(DEPLOY_GATE)`, the old code on its old side.
    pub gated: bool,
    /// The body deployed.
    pub program: Program,
}

fn is_wait(op: &Op) -> bool {
    matches!(
        op,
        Op::Sleep { .. } | Op::SleepUntil { .. } | Op::Elicit { .. } | Op::ElicitTimeout { .. }
    )
}

/// Shapes `program` (root `t0`'s) for a deploy: puts the step [`TARGET`] near its start, with
/// a wait somewhere after it (one is added right behind it if none follows), so that a task
/// in flight often waits with the target recorded; returns the changed body to deploy.
pub fn prepare_deploy(rng: &mut Rng, program: &mut Program) -> Deploy {
    // The target never waits for a retry: a task whose journal holds a due retry of a step
    // the new code no longer reaches is ticked over and over until the code's next wait ends
    // (an engine issue: see `TARGET_RETRIES`).
    let behaviour = match Behaviour::generate(rng) {
        retries if !TARGET_RETRIES && retries.retries() => Behaviour::Ok,
        behaviour => behaviour,
    };
    let target = Op::Step(StepOp {
        name: TARGET,
        behaviour,
        idempotency_key: rng.chance(20),
        via_macro: rng.chance(20),
    });
    let at = rng.below(program.ops.len().min(2) as u64 + 1) as usize;
    program.ops.insert(at, target);
    let wait = match program.ops[at + 1..].iter().position(is_wait) {
        Some(offset) => at + 1 + offset,
        None => {
            let wait = if rng.chance(60) {
                Op::Elicit {
                    name: rng.pick(&ELICIT_NAMES),
                }
            } else {
                Op::Sleep {
                    name: rng.pick(&SLEEP_NAMES),
                    ms: rng.range(5, 60) * 1000,
                }
            };
            program.ops.insert(at + 1, wait);
            at + 1
        }
    };
    let change = rng.pick(&Change::ALL);
    let gated = rng.chance(50);
    let changed = changed_program(program, at, wait, change, gated);
    Deploy {
        change,
        gated,
        program: changed,
    }
}

/// `program` with its step at `at` changed as `change` says (`wait`: the first wait behind it).
fn changed_program(
    program: &Program,
    at: usize,
    wait: usize,
    change: Change,
    gated: bool,
) -> Program {
    let target = program.ops[at].clone();
    let renamed = match &target {
        Op::Step(step) => Op::Step(StepOp {
            name: RENAMED,
            ..step.clone()
        }),
        other => other.clone(),
    };
    let added = Op::Step(StepOp {
        name: ADDED,
        behaviour: Behaviour::Ok,
        idempotency_key: false,
        via_macro: false,
    });
    let gate = |new: Vec<Op>, old: Vec<Op>| Op::Gated {
        id: DEPLOY_GATE,
        new,
        old,
    };
    let mut ops = program.ops.clone();
    match (change, gated) {
        (Change::Rename, false) => ops[at] = renamed,
        (Change::Rename, true) => ops[at] = gate(vec![renamed], vec![target]),
        (Change::Remove, false) => {
            ops.remove(at);
        }
        (Change::Remove, true) => ops[at] = gate(Vec::new(), vec![target]),
        (Change::MoveBehindWork, false) => {
            ops.remove(at);
            ops.extend([added, target]);
        }
        (Change::MoveBehindWork, true) => {
            ops[at] = gate(Vec::new(), vec![target.clone()]);
            ops.push(gate(vec![added, target], Vec::new()));
        }
        (Change::MoveBehindWait, false) => {
            ops.insert(wait + 1, target);
            ops.remove(at);
        }
        (Change::MoveBehindWait, true) => {
            ops.insert(wait + 1, gate(vec![target.clone()], Vec::new()));
            ops[at] = gate(Vec::new(), vec![target]);
        }
    }
    Program {
        ops,
        end: program.end,
    }
}

/// Shapes `program` for the race of a cancel and an answer: a compensation (if the grammar
/// has them) and an elicitation, at the end of the body (nothing left to do after the
/// answer) or at a random place (work after it, most of the time).
pub fn prepare_race(rng: &mut Rng, grammar: Grammar, program: &mut Program) {
    let at = if rng.chance(50) {
        program.ops.len()
    } else {
        rng.below(program.ops.len() as u64 + 1) as usize
    };
    let elicit = Op::Elicit {
        name: rng.pick(&ELICIT_NAMES),
    };
    program.ops.insert(at, elicit);
    if grammar.cleanups {
        let (name, record) = rng.pick(&CLEANUPS);
        let behaviour = if rng.chance(80) {
            Behaviour::Ok
        } else {
            Behaviour::FailFirst(1)
        };
        let on_cancel = Op::OnCancel {
            name,
            record,
            behaviour,
        };
        program.ops.insert(at, on_cancel);
    }
}

/// The journal keys `program` reaches, in order, taking the new side of every gate: steps,
/// sleeps, inputs and child starts (not the context's own `$` rows).
pub fn journal_keys(program: &Program) -> Vec<String> {
    fn walk(ops: &[Op], keys: &mut Keys, out: &mut Vec<String>) {
        for op in ops {
            match op {
                Op::Step(StepOp { name, .. })
                | Op::Nested { name, .. }
                | Op::Sleep { name, .. }
                | Op::SleepUntil { name, .. }
                | Op::Elicit { name }
                | Op::ElicitTimeout { name, .. }
                | Op::Check { name, .. } => out.push(keys.claim(name)),
                Op::Loop { step, count } => {
                    out.extend((0..*count).map(|_| keys.claim(step.name)));
                }
                Op::ExplicitNested { .. } => out.push(keys.claim("bad_outer")),
                Op::JoinSteps(steps) => out.extend(steps.iter().map(|s| keys.claim(s.name))),
                Op::Helper(ops) => walk(ops, keys, out),
                Op::JoinBranches(branches) => {
                    for branch in branches {
                        walk(branch, keys, out);
                    }
                }
                Op::Offer { key } => out.push(keys.claim(key)),
                Op::Children(children) => out.extend(children.iter().map(|_| keys.claim(CHILD))),
                Op::Gated { new, .. } => walk(new, keys, out),
                Op::Draw(_) | Op::Status { .. } | Op::OnCancel { .. } => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&program.ops, &mut Keys::default(), &mut out);
    out
}

/// What the rules of a journal that must be reached make of a body deployed under a task
/// whose journal held the body keys `recorded` (with their sequence numbers) and the patch
/// gates `gates` (by id) when the code changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Judgement {
    /// The side each gate the new code reaches takes, where no earlier run recorded one.
    pub gates: BTreeMap<String, bool>,
    /// The task fails with `UnreachedJournal`.
    pub refused: Option<Refusal>,
}

/// How the engine refuses code that does not reach a task's journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The recorded keys it does not reach, in the order they were recorded.
    pub keys: Vec<String>,
    /// The new ground it asked for instead; `None`: it returned.
    pub new_ground: Option<String>,
    /// The new ground is in a join: which branch asks first depends on what each waits for.
    pub in_join: bool,
}

/// Walks `program` as the engine replays it over a journal recorded by other code: each
/// recorded key it reaches counts off; new ground (a step, an elicitation, an offer, a check,
/// a child start with no row; not a sleep, which only waits) while recorded keys are left is
/// refused, and so is a return with keys left; a patch gate with no record takes the old side
/// (`false`) while recorded keys are left. A join reaches the recorded keys of all its
/// branches before it is judged (within one poll, every branch runs through its recorded
/// ground). Every wait is taken to end.
pub fn judge(
    program: &Program,
    recorded: &BTreeMap<String, u64>,
    gates: &BTreeMap<String, bool>,
) -> Judgement {
    let mut walk = Walk {
        recorded,
        unreached: recorded.keys().cloned().collect(),
        visited: BTreeSet::new(),
        keys: Keys::default(),
        gates: gates.clone(),
        judgement: Judgement::default(),
        in_join: false,
    };
    if walk.ops(&program.ops).is_ok() && !walk.unreached.is_empty() {
        walk.refuse(None);
    }
    walk.judgement
}

/// Why a [`Walk`] stopped early: refused, or the body fails by design there.
struct Stop;

struct Walk<'a> {
    recorded: &'a BTreeMap<String, u64>,
    unreached: BTreeSet<String>,
    visited: BTreeSet<String>,
    keys: Keys,
    gates: BTreeMap<String, bool>,
    judgement: Judgement,
    /// The walk is in a join.
    in_join: bool,
}

impl Walk<'_> {
    fn unreached_in_order(&self) -> Vec<String> {
        let mut keys: Vec<&String> = self.unreached.iter().collect();
        keys.sort_by_key(|key| self.recorded.get(*key).copied().unwrap_or(u64::MAX));
        keys.into_iter().cloned().collect()
    }

    fn refuse(&mut self, new_ground: Option<String>) {
        self.judgement.refused = Some(Refusal {
            keys: self.unreached_in_order(),
            new_ground,
            in_join: self.in_join,
        });
    }

    fn known(&self, key: &str) -> bool {
        self.recorded.contains_key(key) || self.visited.contains(key)
    }

    /// The operation under `key`; `defers`: it waits for a judgement on new ground.
    fn ground(&mut self, key: String, defers: bool) -> Result<(), Stop> {
        if self.known(&key) {
            self.unreached.remove(&key);
            return Ok(());
        }
        if defers && !self.unreached.is_empty() {
            self.refuse(Some(key));
            return Err(Stop);
        }
        self.visited.insert(key);
        Ok(())
    }

    /// A join of operations whose keys are `keys` (each with whether it defers).
    fn group(&mut self, keys: Vec<(String, bool)>) -> Result<(), Stop> {
        for (key, _) in &keys {
            if self.known(key) {
                self.unreached.remove(key);
            }
        }
        self.in_join = true;
        let judged = keys
            .into_iter()
            .try_for_each(|(key, defers)| self.ground(key, defers));
        self.in_join = false;
        judged
    }

    fn gate(&mut self, id: &str) -> bool {
        if let Some(side) = self.gates.get(id) {
            return *side;
        }
        let side = self.unreached.is_empty();
        self.gates.insert(id.to_owned(), side);
        self.judgement.gates.insert(id.to_owned(), side);
        side
    }

    fn ops(&mut self, ops: &[Op]) -> Result<(), Stop> {
        for op in ops {
            self.op(op)?;
        }
        Ok(())
    }

    /// The keys of a branch of a join, in order, each with whether it defers.
    fn branch_keys(&mut self, ops: &[Op], out: &mut Vec<(String, bool)>) {
        for op in ops {
            match op {
                Op::Step(step) => out.push((self.keys.claim(step.name), true)),
                Op::Sleep { name, .. } => out.push((self.keys.claim(name), false)),
                Op::ElicitTimeout { name, .. } => out.push((self.keys.claim(name), true)),
                other => unreachable!("no {other:?} in a branch of a join"),
            }
        }
    }

    fn op(&mut self, op: &Op) -> Result<(), Stop> {
        match op {
            Op::Step(step) => {
                let key = self.keys.claim(step.name);
                self.ground(key, true)
            }
            Op::Loop { step, count } => {
                for _ in 0..*count {
                    let key = self.keys.claim(step.name);
                    self.ground(key, true)?;
                }
                Ok(())
            }
            Op::Helper(ops) => self.ops(ops),
            Op::Nested { name, .. }
            | Op::Elicit { name }
            | Op::ElicitTimeout { name, .. }
            | Op::Check { name, .. } => {
                let key = self.keys.claim(name);
                self.ground(key, true)
            }
            Op::ExplicitNested { .. } => {
                let key = self.keys.claim("bad_outer");
                self.ground(key, true)?;
                // Its closure calls the context: the task fails there, by design.
                Err(Stop)
            }
            Op::JoinSteps(steps) => {
                let keys = steps
                    .iter()
                    .map(|step| (self.keys.claim(step.name), true))
                    .collect();
                self.group(keys)
            }
            Op::JoinBranches(branches) => {
                let mut keys = Vec::new();
                for branch in branches {
                    self.branch_keys(branch, &mut keys);
                }
                self.group(keys)
            }
            Op::Sleep { name, .. } | Op::SleepUntil { name, .. } => {
                let key = self.keys.claim(name);
                self.ground(key, false)
            }
            Op::Offer { key } => {
                let key = self.keys.claim(key);
                self.ground(key, true)
            }
            Op::Draw(Draw::Patched(id)) => {
                self.gate(id);
                Ok(())
            }
            Op::Gated { id, new, old } => {
                let side = self.gate(id);
                self.ops(if side { new } else { old })
            }
            Op::Children(children) => {
                for _ in children {
                    let key = self.keys.claim(CHILD);
                    self.ground(key, true)?;
                }
                Ok(())
            }
            Op::Draw(_) | Op::Status { .. } | Op::OnCancel { .. } => Ok(()),
        }
    }
}
