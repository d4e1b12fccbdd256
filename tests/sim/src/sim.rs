//! One simulated run: a scenario (programs and events, all from a seed), the driver that
//! plays it through the real engine on virtual time, and the invariants checked after every
//! event.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use durable_mcp::__internals::child_task_id;
use durable_mcp::__internals::schedule::next_wake;
use durable_mcp::LocalBoxFuture;
use durable_mcp::http::CreateTask;
use durable_mcp::http::{Clock, Host, Scheduler};
use durable_mcp::http::{Divergence, EngineError};
use durable_mcp::http::{Engine, Router};
use durable_mcp::http::{Headers, HttpRequest};
use durable_mcp::native::SqliteStore;
use durable_mcp::store::Store;
use durable_mcp::store::{ChildOutcome, StepRow};
use durable_mcp::store::{LoadScope, StepKind, StepStatus, TaskState};
use durable_mcp::testing::{
    MemoryStore, RecordingScheduler, VIRTUAL_EPOCH, VirtualClock, VirtualTimer,
};
use durable_mcp::{McpServer, TaskRegistry, TaskTool};
use durable_mcp::{TaskStatus, Timestamp};
use durable_mcp_tests::mcp::McpClient;
use serde_json::{Value, json};

use crate::body::{TASK_NAME, definition};
use crate::program::{
    ADDED, DEPLOY_GATE, Deploy, Grammar, Member, Program, RENAMED, Refusal, TARGET, family,
    journal_keys, judge, model, prepare_deploy, prepare_race,
};
use crate::rng::{Rng, hash};
use crate::shared::{
    DeployWatch, Shared, TaskKey, Violation, expired, stopped_key, unstopped_children,
};
use crate::store::{FaultKind, FaultyStore};

/// The largest timestamp every host can store and schedule (8.64e15 ms).
pub const MAX_TIMESTAMP: u64 = 8_640_000_000_000_000;

/// Where `tasks/get` shows the last status meta (the TypeScript reference's key).
const STATUS_META_KEY: &str = "io.durable-mcp-server/status";

/// How many polls one settling may take before the sim calls it a livelock.
const SETTLE_LIMIT: usize = 2_000;

/// How many rounds the closing phase may take to finish every task.
const FINISH_LIMIT: usize = 400;

/// How far ahead a wake-up may be for the closing phase to wait for it; a task waiting
/// longer is parked and gets cancelled.
const PARKED: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// How the native host re-arms a task whose tick failed.
const TICK_RETRY: Duration = Duration::from_secs(1);

/// What a run may do.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// What bodies may contain.
    pub grammar: Grammar,
    /// Every how many seeds the run uses the SQLite store (0: never).
    pub sqlite_every: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            grammar: Grammar::FULL,
            sqlite_every: 8,
        }
    }
}

/// Which answer an [`Event::Answer`] sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerMode {
    /// To an open request (a first answer).
    Open,
    /// To any request, answered or not (duplicates, late answers).
    Any,
    /// To a key nothing asked.
    Unknown,
}

/// A control-plane or host event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Creates task `n` (a client retries a failed creation); nothing for a child, which only
    /// its parent creates. Here and below, `n` numbers the run's [`members`].
    Create(usize),
    /// Polls running activations and starts due ticks until nothing moves.
    Settle,
    /// Polls each woken activation once.
    Poll,
    /// Moves time to the next wake-up or timer, then settles.
    Advance,
    /// Moves time on by this many milliseconds without settling (late ticks).
    Jump(u64),
    /// `tasks/update` of task `task`: `pick` chooses the key, `variant` the response.
    Answer {
        /// The task.
        task: usize,
        /// Which key, among the candidates.
        pick: u64,
        /// Which response.
        variant: u8,
        /// Which candidates.
        mode: AnswerMode,
    },
    /// `tasks/cancel` of task `n`.
    Cancel(usize),
    /// The host dies and starts again: the engine and every activation are dropped, a new
    /// engine recovers over the same rows.
    Restart,
    /// A tick of task `n` now, due or not (duplicate and early wakes).
    Tick(usize),
    /// `tasks/cancel` of task `task`, then at once (no tick, no poll between) a `tasks/update`
    /// answering every request it waits on with `variant`: the race of a cancel and an answer
    /// recorded before the next activation. Nothing if the task waits on no request.
    CancelAnswer {
        /// The task.
        task: usize,
        /// Which response.
        variant: u8,
    },
    /// The host restarts on changed code: root `t0`'s body becomes the scenario's
    /// [`Deploy`] program under whatever of it is in flight (once; later deploys restart).
    Deploy,
    /// Arms a store fault at the `after`-th write from now.
    Fault {
        /// Which write.
        after: u32,
        /// What happens.
        kind: FaultKind,
    },
}

/// Everything one seed decides.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The seed.
    pub seed: u64,
    /// One program per root task (children's programs are inside them).
    pub programs: Vec<Program>,
    /// The events, in order.
    pub events: Vec<Event>,
    /// Whether the SQLite store is used (else the memory store).
    pub sqlite: bool,
    /// The engine's redelivery lease, in milliseconds.
    pub lease_ms: u64,
    /// The engine's hand-off time (`Engine::hand_off`), in milliseconds.
    pub hand_off_ms: Option<u64>,
    /// Each task's retention, in milliseconds (`None`: forever).
    pub ttl_ms: Vec<Option<u64>>,
    /// The changed body of root `t0` that [`Event::Deploy`] deploys.
    pub deploy: Option<Deploy>,
}

impl Scenario {
    /// The scenario of `seed`.
    pub fn generate(seed: u64, config: &Config) -> Scenario {
        let mut rng = Rng::new(seed);
        let tasks = rng.range(1, 3) as usize;
        let programs: Vec<Program> = (0..tasks)
            .map(|_| Program::generate(&mut rng, config.grammar, VIRTUAL_EPOCH.0))
            .collect();
        let count = rng.range(15, 60) as usize;
        let mut events = vec![Event::Create(0)];
        // Events reach children as they reach roots (cancels, answers, early ticks).
        let members = members(&programs).len() as u64;
        for _ in 1..count {
            let task = rng.below(members) as usize;
            let event = match rng.below(100) {
                0..6 => Event::Create(task),
                6..26 => Event::Settle,
                26..34 => Event::Poll,
                34..54 => Event::Advance,
                54..58 => Event::Jump(rng.range(1, 600) * 1000),
                58..70 => Event::Answer {
                    task,
                    pick: rng.next_u64(),
                    variant: rng.below(3) as u8,
                    mode: match rng.below(10) {
                        0..6 => AnswerMode::Open,
                        6..9 => AnswerMode::Any,
                        _ => AnswerMode::Unknown,
                    },
                },
                70..72 => Event::Cancel(task),
                72..76 => Event::Restart,
                76..81 => Event::Tick(task),
                _ => Event::Fault {
                    after: rng.range(1, 8) as u32,
                    kind: match rng.below(10) {
                        0..4 => FaultKind::Fail,
                        4..6 => FaultKind::CrashBefore,
                        6..8 => FaultKind::CrashAfter,
                        _ => FaultKind::Torn(rng.range(1, 3) as u32),
                    },
                },
            };
            events.push(event);
        }
        let sqlite = config.sqlite_every > 0 && seed.is_multiple_of(config.sqlite_every);
        let lease_ms = if rng.chance(50) {
            durable_mcp::__internals::DEFAULT_LEASE.as_millis() as u64
        } else {
            rng.range(3, 30) * 1000
        };
        let hand_off_ms = rng.chance(30).then(|| rng.range(1, 10) * 1000);
        let ttl_ms = (0..tasks)
            .map(|_| rng.chance(25).then(|| rng.range(5, 30) * 60_000))
            .collect();
        let mut scenario = Scenario {
            seed,
            programs,
            events,
            sqlite,
            lease_ms,
            hand_off_ms,
            ttl_ms,
            deploy: None,
        };
        scenario.add_races_and_deploys(config.grammar);
        scenario
    }

    /// Shapes bodies for the race of a cancel and an answer and for a deploy, and adds their
    /// events. They come from a generator of their own, so that a seed keeps the programs and
    /// events it drew before they existed, with these added.
    fn add_races_and_deploys(&mut self, grammar: Grammar) {
        let mut rng = Rng::new(hash(&["races and deploys", &self.seed.to_string()]));
        let mut raced = Vec::new();
        if grammar.races {
            for (n, program) in self.programs.iter_mut().enumerate() {
                if rng.chance(35) {
                    prepare_race(&mut rng, grammar, program);
                    raced.push(n);
                }
            }
        }
        if grammar.deploys && rng.chance(35) {
            self.deploy = Some(prepare_deploy(&mut rng, &mut self.programs[0]));
            // In the first half, while `t0` is more often in flight.
            let at = rng.range(1, self.events.len().div_ceil(2) as u64) as usize;
            self.events.insert(at, Event::Deploy);
        }
        if !raced.is_empty() {
            for _ in 0..rng.range(1, 3) {
                let event = Event::CancelAnswer {
                    task: rng.pick(&raced),
                    variant: rng.below(3) as u8,
                };
                let at = rng.range(1, self.events.len() as u64) as usize;
                self.events.insert(at, event);
            }
        }
    }
}

/// Every task of a run over root programs `programs`: the roots (`t0`, `t1`, ...), then the
/// children their bodies may start (a root's family together, parents before children).
pub fn members(programs: &[Program]) -> Vec<Member> {
    let families: Vec<Vec<Member>> = programs
        .iter()
        .enumerate()
        .map(|(i, program)| family(format!("t{i}"), None, program))
        .collect();
    let roots = families.iter().map(|members| members[0].clone());
    let children = families
        .iter()
        .flat_map(|members| members[1..].iter().cloned());
    roots.chain(children).collect()
}

/// What one run did and found.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Events played (the scenario's and the closing phase's rounds).
    pub events: u64,
    /// Store faults injected.
    pub faults: u64,
    /// Of which: failed writes, crashes before a write, crashes after one, torn batches.
    pub faults_by_kind: [u64; 4],
    /// Step rows lost to torn batches.
    pub torn_rows: u64,
    /// Store writes attempted.
    pub writes: u64,
    /// Host restarts (crashes and planned).
    pub restarts: u64,
    /// Step closures started.
    pub closure_runs: u64,
    /// Child tasks created.
    pub children: u64,
    /// Of which: ended completed, failed, cancelled.
    pub children_by_end: [u64; 3],
    /// Child starts whose join returned.
    pub joins: u64,
    /// Races played: a cancel recorded while no activation ran, on a task waiting for input
    /// with compensations registered, then an answer to it.
    pub races: u64,
    /// Of which: the answer was to the body's last journal operation (nothing left to do).
    pub bare_races: u64,
    /// Deploys, by change (see [`Change::ALL`](crate::program::Change::ALL)) and gate
    /// (ungated, gated).
    pub deploys: [[u64; 2]; 4],
    /// Of which: no task in flight; refused by the rules; the task keeps its old path behind
    /// the gate; the task runs the new code.
    pub deploy_judgements: [u64; 4],
    /// Deploys under a task in flight that had recorded the changed step.
    pub deploys_over_target: u64,
    /// Tasks that ended failed with the error of a journal not reached.
    pub refusals: u64,
    /// What did not hold.
    pub violations: Vec<Violation>,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} events, {} writes, {} faults, {} restarts, {} closure runs, {} children, {} \
             joins, {} violations",
            self.events,
            self.writes,
            self.faults,
            self.restarts,
            self.closure_runs,
            self.children,
            self.joins,
            self.violations.len()
        )
    }
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

struct Activation {
    task_id: String,
    woken: Arc<Flag>,
    future: LocalBoxFuture<'static, Result<(), EngineError>>,
}

/// A terminal task as a poller sees it.
#[derive(Clone, Debug, PartialEq)]
struct Terminal {
    status: TaskStatus,
    result: Option<String>,
    error: Option<String>,
}

struct World {
    scenario: Scenario,
    shared: Rc<Shared>,
    store: Rc<FaultyStore>,
    clock: Rc<VirtualClock>,
    scheduler: Rc<RecordingScheduler>,
    registry: TaskRegistry,
    engine: Rc<Engine>,
    /// The task tool, for a router over the engine.
    tool: TaskTool,
    running: Vec<Activation>,
    /// Every task: the roots, then the children (see [`members`]).
    ids: Vec<String>,
    /// How many of `ids` are roots.
    roots: usize,
    /// Each child's parent.
    parents: BTreeMap<String, String>,
    /// Each task's program.
    programs: BTreeMap<String, Program>,
    cancels: BTreeSet<String>,
    kinds: BTreeMap<TaskKey, StepKind>,
    finished_steps: BTreeMap<TaskKey, (StepStatus, Option<String>)>,
    /// The `$stopped:<key>` marks seen, which stay until their task is purged.
    stopped: BTreeSet<TaskKey>,
    responses: BTreeMap<TaskKey, String>,
    terminal: BTreeMap<String, Terminal>,
    /// Each task's rows as last seen (a purged task's last state).
    last_seen: BTreeMap<String, TaskState>,
    restarts: u64,
    events: u64,
    /// A livelock was found: the run stops.
    halted: bool,
    /// The scenario's deploy was played.
    deployed: bool,
    races: u64,
    bare_races: u64,
    deploys: [[u64; 2]; 4],
    deploy_judgements: [u64; 4],
    deploys_over_target: u64,
    _dir: Option<tempfile::TempDir>,
}

/// Plays `scenario` and returns what it found.
pub fn run(scenario: &Scenario) -> Outcome {
    let clock = VirtualClock::new();
    let (inner, dir): (Rc<dyn Store>, _) = if scenario.sqlite {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = SqliteStore::open(dir.path().join("sim.db")).expect("the SQLite store");
        (Rc::new(store), Some(dir))
    } else {
        (Rc::new(MemoryStore::new()), None)
    };
    let shared = Shared::new(inner, Rc::clone(&clock));
    let members = members(&scenario.programs);
    let ids: Vec<String> = members.iter().map(|m| m.id.clone()).collect();
    let parents = members
        .iter()
        .filter_map(|m| Some((m.id.clone(), m.parent.clone()?)))
        .collect();
    let programs: BTreeMap<String, Program> =
        members.into_iter().map(|m| (m.id, m.program)).collect();
    for (id, program) in &programs {
        shared
            .programs
            .borrow_mut()
            .insert(id.clone(), Rc::new(program.clone()));
    }
    let store = Rc::new(FaultyStore::new(
        Rc::clone(&shared.inner),
        Rc::clone(&shared),
    ));
    let scheduler = Rc::new(RecordingScheduler::default());
    let registry = TaskRegistry::new().register(definition(Rc::clone(&shared)));
    let tool = TaskTool::new(definition(Rc::clone(&shared)), json!({ "type": "object" }));
    let engine = build_engine(scenario, &registry, &tool, &store, &clock, &scheduler);
    let mut world = World {
        scenario: scenario.clone(),
        shared,
        store,
        clock,
        scheduler,
        registry,
        engine,
        tool,
        running: Vec::new(),
        roots: scenario.programs.len(),
        ids,
        parents,
        programs,
        cancels: BTreeSet::new(),
        kinds: BTreeMap::new(),
        finished_steps: BTreeMap::new(),
        stopped: BTreeSet::new(),
        responses: BTreeMap::new(),
        terminal: BTreeMap::new(),
        last_seen: BTreeMap::new(),
        restarts: 0,
        events: 0,
        halted: false,
        deployed: false,
        races: 0,
        bare_races: 0,
        deploys: [[0; 2]; 4],
        deploy_judgements: [0; 4],
        deploys_over_target: 0,
        _dir: dir,
    };
    let trace = crate::tracing();
    for event in &scenario.events {
        if trace {
            eprintln!("sim: at {} ms: {event:?}", world.now().0);
        }
        if world.halted {
            break;
        }
        world.play(event);
        world.events += 1;
        if world.store.is_dead() {
            world.restart();
        }
        world.check();
    }
    if !world.halted {
        world.finish();
    }
    if !world.halted {
        world.final_checks();
    }
    let (children, children_by_end) = world.child_figures();
    Outcome {
        events: world.events,
        faults: world.store.faults(),
        faults_by_kind: world.store.faults_by_kind(),
        torn_rows: world.store.torn_rows(),
        writes: world.store.writes(),
        restarts: world.restarts,
        closure_runs: world.shared.closure_runs(),
        children,
        children_by_end,
        joins: world.shared.joins(),
        races: world.races,
        bare_races: world.bare_races,
        deploys: world.deploys,
        deploy_judgements: world.deploy_judgements,
        deploys_over_target: world.deploys_over_target,
        refusals: world.refusals(),
        violations: world.shared.violations(),
    }
}

/// The engine of a (re)started host, reaching other tasks (children to start and cancel,
/// parents to tell) through itself, as under a [`Router`] of the native host.
fn build_engine(
    scenario: &Scenario,
    registry: &TaskRegistry,
    tool: &TaskTool,
    store: &Rc<FaultyStore>,
    clock: &Rc<VirtualClock>,
    scheduler: &Rc<RecordingScheduler>,
) -> Rc<Engine> {
    let store: Rc<dyn Store> = store.clone();
    let host = Host {
        store,
        clock: clock.clone(),
        timer: Rc::new(VirtualTimer(clock.clone())),
        scheduler: scheduler.clone(),
    };
    let engine =
        Engine::new(registry.clone(), host).lease(Duration::from_millis(scenario.lease_ms));
    let engine = Rc::new(match scenario.hand_off_ms {
        Some(ms) => engine.hand_off(Duration::from_millis(ms)),
        None => engine,
    });
    let server = McpServer::new("sim", "0.0.0").task(tool.clone());
    Router::new(server, Rc::clone(&engine));
    engine
}

/// Each task's rows, as one check reads them.
type States = BTreeMap<String, TaskState>;

/// Whether `id` waits for one of its children, which wakes it when it ends: the child lives,
/// or ended and has yet to tell it (and has a wake of its own for that). A child its cleanup
/// asked to stop is waited for no more.
fn waits_for_child(id: &str, state: &TaskState, states: &States) -> bool {
    unstopped_children(state).any(|row| {
        let child = states.get(&child_task_id(id, &row.key));
        child.is_some_and(|child| {
            let task = &child.task;
            !task.status.is_terminal() || task.parent.as_ref().is_some_and(|link| !link.notified)
        })
    })
}

/// The key under which a parent records that the child it started under `key` exists.
fn started_key(key: &str) -> String {
    format!("$started:{key}")
}

/// The body's journal keys of `state`: steps, sleeps, inputs, children (not `$` rows).
fn body_keys(state: &TaskState) -> impl Iterator<Item = &str> {
    let steps = state.steps.keys();
    let inputs = state.inputs.keys();
    steps
        .chain(inputs)
        .map(String::as_str)
        .filter(|key| !key.starts_with('$'))
}

/// Whether the task failed because its body did not reach its journal.
fn refused(state: &TaskState) -> bool {
    let error = state.task.error.as_ref();
    error.is_some_and(|e| e.message.starts_with(UNREACHED))
}

/// How the error of a journal not reached begins.
const UNREACHED: &str = "non-determinism: the body did not reach";

/// How the error of `refusal` begins (up to the new ground, when a join's branch asks for it:
/// which branch asks first depends on what each waits for), in the engine's own words.
fn refusal_message(refusal: &Refusal) -> String {
    const IN_JOIN: &str = "and went on to new ground at ";
    let instead = match &refusal.new_ground {
        Some(key) => Divergence::NewGround(key.clone()),
        None => Divergence::Returned,
    };
    let keys = refusal.keys.clone();
    let message = EngineError::UnreachedJournal { keys, instead }.to_string();
    match message.find(IN_JOIN) {
        Some(at) if refusal.in_join => message[..at + IN_JOIN.len()].to_owned(),
        _ => message,
    }
}

/// What the rules make of `program` deployed under the task of `state`.
fn deploy_watch(state: &TaskState, program: &Program) -> DeployWatch {
    let recorded: BTreeMap<String, u64> = state
        .steps
        .values()
        .map(|row| (&row.key, row.seq))
        .chain(state.inputs.values().map(|row| (&row.key, row.seq)))
        .filter(|(key, _)| !key.starts_with('$'))
        .map(|(key, seq)| (key.clone(), seq))
        .collect();
    let gates: BTreeMap<String, bool> = state
        .steps
        .values()
        .filter_map(|row| {
            let id = row.key.strip_prefix("$patch:")?;
            Some((id.to_owned(), row.result.as_deref() == Some("true")))
        })
        .collect();
    let judgement = judge(program, &recorded, &gates);
    // A task that recorded the step under its old name never runs what replaced it.
    let forbidden = if recorded.contains_key(TARGET) {
        [RENAMED, ADDED].map(str::to_owned).into()
    } else {
        BTreeSet::new()
    };
    DeployWatch {
        journal: recorded.into_keys().collect(),
        judgement,
        forbidden,
    }
}

fn response(variant: u8) -> Value {
    json!({ "action": "accept", "content": { "n": variant } })
}

impl World {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Moves virtual time to `at` (never back, never past what a real clock can read: a
    /// wake-up beyond [`MAX_TIMESTAMP`] never comes), firing the timers due.
    fn set_clock(&self, at: Timestamp) {
        let at = at.min(Timestamp(MAX_TIMESTAMP)).max(self.now());
        self.clock.set(at);
    }

    fn play(&mut self, event: &Event) {
        match event {
            // Creating an existing task again (the same id) must leave it as it is.
            Event::Create(n) => self.create(*n, true),
            Event::Settle => self.settle(),
            Event::Poll => {
                self.poll_running();
            }
            Event::Advance => self.advance(),
            Event::Jump(ms) => {
                // Wakes due meanwhile fire late; a timer inside an activation (a step's
                // timeout, a slow closure) is never jumped over, so two timers never come
                // due at one instant and a timeout stays a timeout.
                let mut target = self.now().saturating_add(Duration::from_millis(*ms));
                if let Some(timer) = self.clock.next_timer() {
                    target = target.min(timer);
                }
                self.set_clock(target);
            }
            Event::Answer {
                task,
                pick,
                variant,
                mode,
            } => self.answer(*task, *pick, *variant, *mode),
            Event::Cancel(n) => {
                if let Some(id) = self.ids.get(*n).cloned() {
                    self.cancel(&id);
                }
            }
            Event::CancelAnswer { task, variant } => self.cancel_then_answer(*task, *variant),
            Event::Deploy => self.deploy(),
            Event::Restart => self.restart(),
            Event::Tick(n) => {
                if let Some(id) = self.ids.get(*n).cloned() {
                    self.start_tick(id);
                }
            }
            Event::Fault { after, kind } => self.store.arm(*after, *kind),
        }
    }

    fn cancel(&mut self, id: &str) {
        self.cancels.insert(id.to_owned());
        let faults = self.store.faults();
        let _ = self.engine.cancel(id, None);
        if let Some(state) = self.task_state(id)
            && state.task.cancel_requested
        {
            // Nothing runs the body, and no write failed: the cancellation settles at once,
            // unless compensations are registered or children started, which an activation
            // runs or cancels first.
            let cleanup = state.has_cleanup();
            if !self.engine.is_running(id)
                && !cleanup
                && self.store.faults() == faults
                && !self.store.is_dead()
            {
                self.shared.violate(
                    "cancel-not-settled",
                    id,
                    format!(
                        "cancelled while idle ({}), the task is still {} with the request pending",
                        state.task.status, state.task.status
                    ),
                );
            }
        }
    }

    /// The race of a cancel and an answer: both recorded before the next activation.
    fn cancel_then_answer(&mut self, n: usize, variant: u8) {
        let Some(id) = self.ids.get(n).cloned() else {
            return;
        };
        let Some(before) = self.task_state(&id) else {
            return;
        };
        let open: Vec<String> = before
            .inputs
            .values()
            .filter(|i| i.blocking && !i.answered && !i.consumed)
            .map(|i| i.key.clone())
            .collect();
        if open.is_empty() || before.task.status.is_terminal() {
            return;
        }
        let race = !before.task.cancel_requested
            && !self.engine.is_running(&id)
            && before.pending_cleanup().next().is_some();
        self.cancel(&id);
        if self.store.is_dead() {
            return;
        }
        let response = response(variant);
        let mut answers = serde_json::Map::new();
        for key in &open {
            self.shared.answer_sent(&id, key, &response.to_string());
            answers.insert(key.clone(), response.clone());
        }
        let _ = self.engine.update(&id, &Value::Object(answers), None);
        let pending = self
            .task_state(&id)
            .is_some_and(|s| s.task.cancel_requested && !s.task.status.is_terminal());
        if race && pending {
            self.races += 1;
            let keys = journal_keys(&self.programs[&id]);
            let last = open
                .iter()
                .filter_map(|key| keys.iter().position(|k| k == key))
                .max();
            if last.is_some_and(|at| at + 1 == keys.len()) {
                self.bare_races += 1;
            }
        }
    }

    /// Deploys the scenario's changed body of `t0`: the host restarts on the new code, and
    /// the rules' judgement of it over the journal of a task in flight is noted for the checks.
    fn deploy(&mut self) {
        let Some(deploy) = self.scenario.deploy.clone() else {
            return;
        };
        if std::mem::replace(&mut self.deployed, true) {
            self.restart();
            return;
        }
        // The old code stops with its host: nothing of it runs after.
        self.running.clear();
        let id = self.ids[0].clone();
        self.deploys[deploy.change.index()][usize::from(deploy.gated)] += 1;
        let state = self.task_state(&id);
        // Ended, or purged once it had.
        let ended = match &state {
            Some(state) => state.task.status.is_terminal(),
            None => self.last_seen.contains_key(&id),
        };
        let judged = match state {
            Some(state) if !ended => {
                let watch = deploy_watch(&state, &deploy.program);
                let class = match &watch.judgement {
                    j if j.refused.is_some() => 1,
                    j if j.gates.get(DEPLOY_GATE) == Some(&false) => 2,
                    _ => 3,
                };
                if watch.journal.contains(TARGET) {
                    self.deploys_over_target += 1;
                }
                self.shared.deployed(&id, watch);
                class
            }
            _ => 0,
        };
        if crate::tracing() {
            eprintln!(
                "sim:   deploy under {id} ({}): {:?}",
                if ended { "ended" } else { "not ended" },
                self.shared.deploy_watch(&id)
            );
        }
        self.deploy_judgements[judged] += 1;
        // A task that ended ran the old code, which the checks judge it by.
        if !ended {
            self.programs.insert(id.clone(), deploy.program.clone());
        }
        self.shared
            .programs
            .borrow_mut()
            .insert(id, Rc::new(deploy.program));
        self.restart();
    }

    /// How many tasks ended failed with the error of a journal not reached.
    fn refusals(&self) -> u64 {
        let ids = self.ids.iter();
        let states = ids.filter_map(|id| self.state_or_last(id));
        states.filter(refused).count() as u64
    }

    fn task_state(&self, id: &str) -> Option<TaskState> {
        self.shared.inner.load(id, LoadScope::Full).ok().flatten()
    }

    fn create(&mut self, n: usize, again: bool) {
        let Some(id) = self.ids[..self.roots].get(n).cloned() else {
            return;
        };
        let exists = self.task_state(&id).is_some();
        // A purged task is gone for good: its id is not reused (a new task under it would be
        // another task to the checks).
        if (exists && !again) || (!exists && self.last_seen.contains_key(&id)) {
            return;
        }
        let ttl = self.scenario.ttl_ms.get(n).copied().flatten();
        let request = CreateTask::new(TASK_NAME, json!({}))
            .task_id(id)
            .ttl(ttl.map(Duration::from_millis));
        let _ = self.engine.create_task(request);
    }

    fn answer(&mut self, n: usize, pick: u64, variant: u8, mode: AnswerMode) {
        let Some(id) = self.ids.get(n).cloned() else {
            return;
        };
        let Some(state) = self.task_state(&id) else {
            return;
        };
        let candidates: Vec<&String> = match mode {
            AnswerMode::Open => state
                .inputs
                .values()
                .filter(|i| !i.answered && !i.consumed)
                .map(|i| &i.key)
                .collect(),
            AnswerMode::Any => state.inputs.keys().collect(),
            AnswerMode::Unknown => Vec::new(),
        };
        let key = if candidates.is_empty() {
            "nosuch".to_owned()
        } else {
            candidates[(pick % candidates.len() as u64) as usize].clone()
        };
        self.send_answer(&id, &key, variant);
    }

    fn send_answer(&mut self, id: &str, key: &str, variant: u8) {
        let response = response(variant);
        self.shared.answer_sent(id, key, &response.to_string());
        let _ = self.engine.update(id, &json!({ key: response }), None);
    }

    fn restart(&mut self) {
        self.running.clear();
        self.scheduler.clear();
        self.store.revive();
        self.shared.disrupt();
        self.restarts += 1;
        self.engine = build_engine(
            &self.scenario,
            &self.registry,
            &self.tool,
            &self.store,
            &self.clock,
            &self.scheduler,
        );
        if let Err(error) = self.engine.recover() {
            self.shared
                .violate("recover-failed", "-", format!("recover failed: {error}"));
        }
    }

    fn start_tick(&mut self, id: String) {
        let engine = Rc::clone(&self.engine);
        let task = id.clone();
        let future = Box::pin(async move { engine.tick(&task).await });
        self.running.push(Activation {
            task_id: id,
            woken: Arc::new(Flag(AtomicBool::new(true))),
            future,
        });
    }

    fn is_running(&self, id: &str) -> bool {
        self.running.iter().any(|a| a.task_id == id)
    }

    fn poll_running(&mut self) -> bool {
        let mut progressed = false;
        let mut index = 0;
        while index < self.running.len() {
            if self.store.is_dead() {
                break;
            }
            let activation = &mut self.running[index];
            if !activation.woken.0.swap(false, Ordering::SeqCst) {
                index += 1;
                continue;
            }
            progressed = true;
            let waker = Waker::from(activation.woken.clone());
            self.store.running(Some(&activation.task_id));
            let polled = activation
                .future
                .as_mut()
                .poll(&mut Context::from_waker(&waker));
            self.store.running(None);
            if crate::tracing() {
                eprintln!(
                    "sim:   poll {} -> {:?}",
                    self.running[index].task_id,
                    match &polled {
                        Poll::Ready(r) =>
                            format!("ready {:?}", r.as_ref().err().map(ToString::to_string)),
                        Poll::Pending => "pending".to_owned(),
                    }
                );
            }
            match polled {
                Poll::Ready(result) => {
                    let activation = self.running.swap_remove(index);
                    if result.is_err() {
                        // As the native host does: try again shortly rather than lose the task.
                        let retry = self.now().saturating_add(TICK_RETRY);
                        self.scheduler.schedule(&activation.task_id, Some(retry));
                    }
                }
                Poll::Pending => index += 1,
            }
        }
        progressed
    }

    fn start_due(&mut self) -> bool {
        let now = self.now();
        let mut started = false;
        for id in self.scheduler.wakes().into_keys() {
            // As the native host does, a due wake is fired even while the task runs (the
            // engine ignores it then).
            if !self.scheduler.take_due(&id, now) {
                continue;
            }
            self.start_tick(id);
            started = true;
        }
        started
    }

    fn settle(&mut self) {
        if self.halted {
            return;
        }
        for _ in 0..SETTLE_LIMIT {
            if self.store.is_dead() {
                return;
            }
            if !(self.poll_running() | self.start_due()) {
                return;
            }
        }
        self.shared.violate(
            "livelock",
            "-",
            format!(
                "ticks kept coming for {SETTLE_LIMIT} polls without time moving (now {}); \
                 running: {:?}; tasks: {:?}",
                self.now().0,
                self.running.iter().map(|a| &a.task_id).collect::<Vec<_>>(),
                self.ids
                    .iter()
                    .filter_map(|id| self.task_state(id))
                    .map(|s| (
                        s.task.task_id,
                        s.task.status,
                        s.task.next_run_at.map(|t| t.0)
                    ))
                    .collect::<Vec<_>>()
            ),
        );
        self.halted = true;
    }

    /// The earliest wake-up or timer, unless it is so far ahead that what waits for it is
    /// parked for good (see [`PARKED`]).
    fn next_event(&self) -> Option<Timestamp> {
        let horizon = self.now().saturating_add(PARKED);
        let wakes = self.scheduler.wakes().into_values().min();
        [wakes, self.clock.next_timer()]
            .into_iter()
            .flatten()
            .filter(|at| *at <= horizon)
            .min()
    }

    /// The tasks whose wake-up is beyond [`PARKED`].
    fn parked(&self) -> Vec<String> {
        let horizon = self.now().saturating_add(PARKED);
        let wakes = self.scheduler.wakes();
        self.ids
            .iter()
            .filter(|id| wakes.get(*id).is_some_and(|at| *at > horizon))
            .cloned()
            .collect()
    }

    fn advance(&mut self) {
        self.settle();
        if self.store.is_dead() {
            return;
        }
        // What settled is checked before time moves on (a purge may follow at once).
        self.check();
        if let Some(at) = self.next_event() {
            self.set_clock(at);
        }
        self.settle();
    }

    /// Runs every task to its end: no faults, every open elicitation answered.
    fn finish(&mut self) {
        self.store.disarm();
        let trace = crate::tracing();
        for _ in 0..FINISH_LIMIT {
            if self.halted {
                return;
            }
            self.events += 1;
            if trace {
                eprintln!("sim: at {} ms: closing round", self.now().0);
            }
            for n in 0..self.roots {
                self.create(n, false);
            }
            self.settle();
            if self.store.is_dead() {
                self.restart();
            }
            let mut open = Vec::new();
            for id in &self.ids {
                let Some(state) = self.task_state(id) else {
                    continue;
                };
                if state.task.status == TaskStatus::InputRequired {
                    open.extend(
                        state
                            .inputs
                            .values()
                            .filter(|i| i.blocking && !i.answered)
                            .map(|i| (id.clone(), i.key.clone())),
                    );
                }
            }
            for (id, key) in open {
                self.send_answer(&id, &key, 0);
            }
            self.settle();
            self.check();
            let all_done = self.ids.iter().all(|id| self.done(id));
            if all_done {
                return;
            }
            let waiting_for_input = self.ids.iter().any(|id| {
                self.task_state(id)
                    .is_some_and(|s| s.task.status == TaskStatus::InputRequired)
            });
            let parked = self.parked();
            match self.next_event() {
                Some(at) => self.set_clock(at),
                // What waits that long is parked for good: a client cancels it.
                None if !parked.is_empty() => {
                    for id in parked {
                        self.cancel(&id);
                    }
                }
                None if self.running.is_empty() && !waiting_for_input => return,
                None => {}
            }
        }
    }

    /// The invariants that hold after every event.
    fn check(&mut self) {
        for (task, key) in self.store.take_torn() {
            if key.starts_with('$') {
                // A torn batch that lost a cleanup's rows takes its record of having begun
                // with it, as it takes a step's: the body may get past the cancel then.
                self.shared.forget_compensations(&task);
            }
            self.stopped.remove(&(task.clone(), key.clone()));
            self.finished_steps.remove(&(task, key));
        }
        // Each task is read once: the checks of parents and children read each other's rows.
        let states: States = self
            .ids
            .iter()
            .filter_map(|id| Some((id.clone(), self.task_state(id)?)))
            .collect();
        for id in self.ids.clone() {
            let Some(state) = states.get(&id) else {
                if let Some(last) = self.last_seen.get(&id) {
                    // Only a finished task is purged, and only once its retention is over.
                    let purge_at = durable_mcp::__internals::schedule::purge_at(last);
                    if !last.task.status.is_terminal() || purge_at.is_none_or(|at| at > self.now())
                    {
                        self.shared.violate(
                            "terminal-changed",
                            &id,
                            format!(
                                "the {} task vanished at {} (purge due at {:?})",
                                last.task.status,
                                self.now().0,
                                purge_at.map(|at| at.0)
                            ),
                        );
                    }
                }
                continue;
            };
            self.check_journal(&id, state);
            self.check_terminal(&id, state);
            self.check_wake(&id, state, &states);
            self.check_timestamps(&id, state);
            self.check_sleep_cuts(&id, state);
            self.check_started_children(&id, state, &states);
            if let Some(parent) = self.parents.get(&id) {
                self.check_parent_link(&id, parent, state, &states);
            }
        }
        self.last_seen.extend(states);
    }

    fn check_journal(&mut self, id: &str, state: &TaskState) {
        for (key, row) in &state.steps {
            if state.inputs.contains_key(key) {
                self.shared.violate(
                    "key-kinds",
                    id,
                    format!("{key:?} is both a {} step and an input request", row.kind),
                );
            }
        }
        let kinds = state
            .steps
            .values()
            .map(|row| (&row.key, row.kind))
            .chain(state.inputs.values().map(|row| (&row.key, row.kind())));
        for (key, kind) in kinds {
            let entry = (id.to_owned(), key.clone());
            match self.kinds.get(&entry) {
                Some(first) if *first != kind => self.shared.violate(
                    "key-kinds",
                    id,
                    format!("{key:?} was recorded as {first}, now as {kind}"),
                ),
                Some(_) => {}
                None => {
                    self.kinds.insert(entry, kind);
                }
            }
        }
        for (key, row) in &state.steps {
            let entry = (id.to_owned(), key.clone());
            let now = (row.status, row.result.clone());
            match self.finished_steps.get(&entry) {
                Some(first) if *first != now => self.shared.violate(
                    "recorded-step-changed",
                    id,
                    format!("{key:?} was recorded as {first:?}, now reads {now:?}"),
                ),
                Some(_) => {}
                None if row.status != StepStatus::Pending => {
                    self.finished_steps.insert(entry, now);
                }
                None => {}
            }
        }
        let vanished: Vec<String> = self
            .finished_steps
            .keys()
            .filter(|(task, key)| task == id && !state.steps.contains_key(key))
            .map(|(_, key)| key.clone())
            .collect();
        for key in vanished {
            self.shared.violate(
                "recorded-step-changed",
                id,
                format!("the recorded step {key:?} vanished from the journal"),
            );
            self.finished_steps.remove(&(id.to_owned(), key));
        }
        // A cleanup's record of a child it stopped stays (unless a torn batch took it).
        for key in state
            .steps
            .keys()
            .filter(|key| key.starts_with(&stopped_key("")))
        {
            self.stopped.insert((id.to_owned(), key.clone()));
        }
        let lost: Vec<String> = self
            .stopped
            .iter()
            .filter(|(task, key)| task == id && !state.steps.contains_key(key))
            .map(|(_, key)| key.clone())
            .collect();
        for key in lost {
            self.shared.violate(
                "child-stop-lost",
                id,
                format!("the record {key:?} of a child asked to stop vanished from the journal"),
            );
            self.stopped.remove(&(id.to_owned(), key));
        }
        for (key, row) in &state.inputs {
            let Some(response) = &row.response else {
                continue;
            };
            let entry = (id.to_owned(), key.clone());
            match self.responses.get(&entry) {
                Some(first) if first != response => self.shared.violate(
                    "answer-changed",
                    id,
                    format!(
                        "the answer to {key:?} was {first}, now {response}: the first must win"
                    ),
                ),
                Some(_) => {}
                None => {
                    self.responses.insert(entry, response.clone());
                }
            }
        }
    }

    fn check_terminal(&mut self, id: &str, state: &TaskState) {
        let task = &state.task;
        let view = Terminal {
            status: task.status,
            result: task.result.clone(),
            error: task.error.as_ref().map(|e| e.message.clone()),
        };
        match self.terminal.get(id) {
            Some(first) if *first != view => self.shared.violate(
                "terminal-changed",
                id,
                format!("the finished task was {first:?}, now {view:?}"),
            ),
            Some(_) => {}
            None if task.status.is_terminal() => {
                self.shared.check_cleanup(id, state);
                self.check_cleanup_children(id, state);
                self.check_cancel_won(id, state);
                self.check_journal_reached(id, state);
                if task.status == TaskStatus::Cancelled && !self.cancel_asked(id) {
                    self.shared.violate(
                        "cancelled-uncalled",
                        id,
                        "cancelled though nobody cancelled it",
                    );
                }
                self.terminal.insert(id.to_owned(), view);
            }
            None => {}
        }
    }

    fn check_wake(&mut self, id: &str, state: &TaskState, states: &States) {
        if state.task.status.is_terminal() || self.is_running(id) {
            return;
        }
        let now = self.now();
        let wake = self.scheduler.wake_of(id);
        let due = next_wake(state);
        match (wake, due) {
            (None, Some(due)) => self.shared.violate(
                "no-wake",
                id,
                format!(
                    "the {} task needs a wake at {} but none is set (now {})",
                    state.task.status, due.0, now.0
                ),
            ),
            (None, None)
                if state.task.status != TaskStatus::InputRequired
                    && !waits_for_child(id, state, states) =>
            {
                self.shared.violate(
                    "no-wake",
                    id,
                    format!(
                        "the {} task has nothing that would ever wake it",
                        state.task.status
                    ),
                );
            }
            (Some(wake), Some(due)) if wake > due.max(now).saturating_add(TICK_RETRY) => {
                self.shared.violate(
                    "late-wake",
                    id,
                    format!("its wake is set at {} but it is due at {}", wake.0, due.0),
                );
            }
            _ => {}
        }
    }

    /// The task's state now, or as last seen if it was purged.
    fn state_or_last(&self, id: &str) -> Option<TaskState> {
        self.task_state(id)
            .or_else(|| self.last_seen.get(id).cloned())
    }

    /// Whether someone asked to cancel `id`: a client, or (for a child) its parent's cleanup,
    /// which cancels the children of a task whose cancellation was recorded.
    fn cancel_asked(&self, id: &str) -> bool {
        self.cancels.contains(id)
            || self
                .parents
                .get(id)
                .is_some_and(|parent| self.shared.cancel_generation(parent).is_some())
    }

    /// A recorded cancel wins: a task whose cancel was recorded before the activation that
    /// ended it claimed it (its lease then was older) ends `cancelled`, not `completed` nor
    /// `failed` (unless it expired, or its code changed under it and does not reach its
    /// journal); only an activation running when the cancel came may complete it.
    fn check_cancel_won(&self, id: &str, state: &TaskState) {
        let Some(at) = self.shared.cancel_generation(id) else {
            return;
        };
        let task = &state.task;
        let lost = match task.status {
            TaskStatus::Completed => true,
            TaskStatus::Failed => !expired(state) && !refused(state),
            _ => false,
        };
        if lost && task.generation > at {
            self.shared.violate(
                "cancel-lost",
                id,
                format!(
                    "its cancel was recorded under lease {at}, and an activation claimed after it \
                     (lease {}) ended it {} ({:?})",
                    task.generation,
                    task.status,
                    task.error
                        .as_ref()
                        .map(|e| &e.message)
                        .or(task.result.as_ref())
                ),
            );
        }
    }

    /// The journal must be reached: a task completes only from a run that reached every key
    /// its journal holds; under changed code, a task the rules refuse fails with the error
    /// naming the keys it did not reach (or is cancelled, or expires), and one they accept is
    /// not refused.
    fn check_journal_reached(&self, id: &str, state: &TaskState) {
        let watch = self.shared.deploy_watch(id);
        let expected = watch.as_ref().and_then(|w| w.judgement.refused.clone());
        match state.task.status {
            TaskStatus::Completed => {
                let reached = self.shared.reached_at_return(id);
                let skipped: Vec<&str> = body_keys(state)
                    .filter(|key| !reached.contains(*key))
                    .collect();
                if !skipped.is_empty() {
                    self.shared.violate(
                        "journal-skipped",
                        id,
                        format!(
                            "the task completed, its body not reaching the recorded {skipped:?}"
                        ),
                    );
                }
                if let Some(refusal) = &expected {
                    self.shared.violate(
                        "journal-skipped",
                        id,
                        format!(
                            "the task completed on code that does not reach the recorded {:?}",
                            refusal.keys
                        ),
                    );
                }
            }
            TaskStatus::Failed if refused(state) => {
                let message = state.task.error.as_ref().map(|e| e.message.as_str());
                let message = message.unwrap_or_default();
                match &expected {
                    Some(refusal) => {
                        let named = refusal_message(refusal);
                        if !message.starts_with(&named) {
                            self.shared.violate(
                                "deploy-outcome",
                                id,
                                format!("refused with {message:?}, the rules say {named:?}"),
                            );
                        }
                    }
                    None => self.shared.violate(
                        "deploy-outcome",
                        id,
                        format!("refused, though its code reaches its whole journal: {message}"),
                    ),
                }
            }
            TaskStatus::Failed if expected.is_some() && !expired(state) => {
                self.shared.violate(
                    "deploy-outcome",
                    id,
                    format!(
                        "the rules refuse the new code over its journal, yet it failed with {:?}",
                        state.task.error.as_ref().map(|e| &e.message)
                    ),
                );
            }
            _ => {}
        }
    }

    /// Checks a task that just finished: one that completed or failed cancelled none of its
    /// children (as one that ran a compensation must end cancelled, see
    /// [`Shared::check_cleanup`]) and recorded no child as stopped. A child nobody else
    /// cancelled was cancelled by its parent's cleanup, which runs only once the parent's body
    /// stopped for its own cancel.
    fn check_cleanup_children(&self, id: &str, state: &TaskState) {
        if state.task.status == TaskStatus::Cancelled || expired(state) {
            return;
        }
        let stops = state
            .steps
            .keys()
            .filter(|key| key.starts_with(&stopped_key("")));
        for key in stops {
            self.shared.violate(
                "child-cancel-without-cancel",
                id,
                format!(
                    "its cleanup recorded {key:?}, but the task ended {}",
                    state.task.status
                ),
            );
        }
        let children = self.parents.iter().filter(|(_, parent)| *parent == id);
        for (child, _) in children {
            let cancelled = self.shared.cancel_generation(child).is_some()
                || self
                    .task_state(child)
                    .is_some_and(|s| s.task.status == TaskStatus::Cancelled);
            if cancelled && !self.cancels.contains(child) {
                self.shared.violate(
                    "child-cancel-without-cancel",
                    id,
                    format!(
                        "its cleanup cancelled child {child}, but the task ended {}",
                        state.task.status
                    ),
                );
            }
        }
    }

    /// Whether the closing phase is over for `id`: it ended and its parent, if any, heard of
    /// it; or it was purged; or it is a child never created whose parent ended (and so never
    /// will create it).
    fn done(&self, id: &str) -> bool {
        match (self.task_state(id), self.parents.get(id)) {
            (Some(state), _) => {
                let task = state.task;
                task.status.is_terminal() && task.parent.is_none_or(|link| link.notified)
            }
            (None, _) if self.last_seen.contains_key(id) => true,
            (None, Some(parent)) => self
                .task_state(parent)
                .is_none_or(|state| state.task.status.is_terminal()),
            (None, None) => false,
        }
    }

    /// The `child` rows of `id` against the children: a child its row says was created
    /// exists, and an ended row records how the child ended. Then the cleanup's records of
    /// the children it asked to stop.
    fn check_started_children(&self, id: &str, state: &TaskState, states: &States) {
        let rows = state
            .steps
            .values()
            .filter(|row| row.kind == StepKind::Child);
        for row in rows {
            let child_id = child_task_id(id, &row.key);
            let child = states
                .get(&child_id)
                .or_else(|| self.last_seen.get(&child_id));
            match (row.status, child) {
                (StepStatus::Pending, None) if state.steps.contains_key(&started_key(&row.key)) => {
                    self.shared.violate(
                        "child-lost",
                        id,
                        format!(
                            "{} says {child_id} was created; it does not exist",
                            started_key(&row.key)
                        ),
                    );
                }
                (StepStatus::Pending, _) => {}
                (_, child) => self.check_child_outcome(id, row, child),
            }
        }
        let stops = state
            .steps
            .values()
            .filter_map(|mark| Some((mark, mark.key.strip_prefix(&stopped_key(""))?)));
        for (mark, key) in stops {
            self.check_child_stopped(id, state, mark, key, states);
        }
    }

    /// An ended `child` row of `parent`: the outcome it records is how the child ended (only
    /// the child's delivered outcome ends the row; a cleanup that stops the child records
    /// that apart, see [`Self::check_child_stopped`]).
    fn check_child_outcome(&self, parent: &str, row: &StepRow, child: Option<&TaskState>) {
        let outcome = ChildOutcome::from_stored(row.result.as_deref());
        let task = child.map(|child| &child.task);
        let agrees = task.is_some_and(|task| Some(&outcome) == ChildOutcome::of(task).as_ref());
        if !agrees {
            self.shared.violate(
                "child-outcome",
                parent,
                format!(
                    "the row of child {:?} records {outcome:?}, the child is {:?}",
                    row.key,
                    task.map(|t| (t.status, &t.result, &t.error))
                ),
            );
        }
    }

    /// The mark `mark` by which `parent`'s cleanup recorded that it asked the child started
    /// under `key` to stop: a pending `value` row, for a start the parent recorded, written
    /// only once the parent's cancellation was; and the cancel reached the child (whose
    /// closures then start no more, as any cancelled task's), or the child had ended before,
    /// or was never created (the cleanup stops every child it has not heard from).
    fn check_child_stopped(
        &self,
        parent: &str,
        state: &TaskState,
        mark: &StepRow,
        key: &str,
        states: &States,
    ) {
        if mark.kind != StepKind::Value || mark.status != StepStatus::Pending {
            self.shared.violate(
                "child-not-cancelled",
                parent,
                format!(
                    "the cleanup's record {:?} is a {} row {:?}, not a pending value",
                    mark.key, mark.kind, mark.status
                ),
            );
        }
        if self.shared.cancel_generation(parent).is_none() {
            self.shared.violate(
                "child-cancel-without-cancel",
                parent,
                format!(
                    "{:?} records a child asked to stop, but the task's cancellation was never \
                     recorded",
                    mark.key
                ),
            );
        }
        if state
            .steps
            .get(key)
            .is_none_or(|row| row.kind != StepKind::Child)
        {
            self.shared.violate(
                "child-not-cancelled",
                parent,
                format!("{:?} stops a child of no recorded start", mark.key),
            );
        }
        let child_id = child_task_id(parent, key);
        let child = states
            .get(&child_id)
            .or_else(|| self.last_seen.get(&child_id));
        let task = child.map(|child| &child.task);
        let reached = task.is_none_or(|task| {
            task.status == TaskStatus::Cancelled
                || self.shared.cancel_generation(&task.task_id).is_some()
                || task.finished_at.is_some_and(|at| at <= mark.created_at)
        });
        if !reached {
            self.shared.violate(
                "child-not-cancelled",
                parent,
                format!(
                    "its cleanup recorded child {key:?} stopped at {}, but no cancel reached it \
                     and it is {} (ended at {:?})",
                    mark.created_at.0,
                    task.map_or(TaskStatus::Working, |t| t.status),
                    task.and_then(|t| t.finished_at).map(|at| at.0),
                ),
            );
        }
    }

    /// A child task `id` of `parent`: it names its parent and the start's key (which its id
    /// derives from), its parent recorded the start before it existed, and once it told its
    /// parent how it ended, the parent waits for it no more.
    fn check_parent_link(&self, id: &str, parent: &str, state: &TaskState, states: &States) {
        let Some(link) = &state.task.parent else {
            self.shared
                .violate("child-link", id, "the child names no parent");
            return;
        };
        if link.task_id != parent || child_task_id(parent, &link.key) != id {
            self.shared.violate(
                "child-link",
                id,
                format!(
                    "the child names parent {} and key {:?}",
                    link.task_id, link.key
                ),
            );
            return;
        }
        let Some(parent_state) = states.get(parent) else {
            return; // purged
        };
        let row = parent_state.steps.get(&link.key);
        let Some(row) = row.filter(|row| row.kind == StepKind::Child) else {
            self.shared.violate(
                "child-without-row",
                id,
                format!("{parent} holds no child row for the start {:?}", link.key),
            );
            return;
        };
        // Only a parent that has ended leaves the outcome untaken (a cancelled one's cleanup
        // leaves the start's row to it).
        let parent_task = &parent_state.task;
        let waits = row.status == StepStatus::Pending && !parent_task.status.is_terminal();
        if waits && link.notified && state.task.status.is_terminal() {
            self.shared.violate(
                "child-outcome-lost",
                id,
                format!(
                    "the child ended {} and its parent took the outcome, but {parent} still \
                     waits for {:?}",
                    state.task.status, link.key
                ),
            );
        }
    }

    /// How many children were created, and how many ended completed, failed and cancelled.
    fn child_figures(&self) -> (u64, [u64; 3]) {
        let mut created = 0;
        let mut by_end = [0; 3];
        for id in self.parents.keys() {
            let Some(state) = self.state_or_last(id) else {
                continue;
            };
            created += 1;
            match state.task.status {
                TaskStatus::Completed => by_end[0] += 1,
                TaskStatus::Failed => by_end[1] += 1,
                TaskStatus::Cancelled => by_end[2] += 1,
                _ => {}
            }
        }
        (created, by_end)
    }

    fn check_timestamps(&mut self, id: &str, state: &TaskState) {
        let task = &state.task;
        let mut stamps: Vec<(String, Option<Timestamp>)> = vec![
            ("task.next_run_at".into(), task.next_run_at),
            ("task.last_updated_at".into(), Some(task.last_updated_at)),
            ("task.finished_at".into(), task.finished_at),
            ("wake".into(), self.scheduler.wake_of(id)),
        ];
        for row in state.steps.values() {
            stamps.push((format!("{}.wake_at", row.key), row.wake_at));
            stamps.push((format!("{}.next_attempt_at", row.key), row.next_attempt_at));
        }
        for row in state.inputs.values() {
            stamps.push((format!("{}.timeout_at", row.key), row.timeout_at));
        }
        for (what, stamp) in stamps {
            if let Some(stamp) = stamp
                && stamp.0 > MAX_TIMESTAMP
            {
                self.shared.violate(
                    "timestamp-cap",
                    id,
                    format!("{what} is {}, above the cap {MAX_TIMESTAMP}", stamp.0),
                );
            }
        }
    }

    fn check_sleep_cuts(&mut self, id: &str, state: &TaskState) {
        let cuts: Vec<&String> = state
            .steps
            .values()
            .filter(|row| row.kind == StepKind::Sleep && row.status == StepStatus::Completed)
            .filter(|row| match (row.completed_at, row.wake_at) {
                (Some(done), Some(wake)) => done < wake,
                _ => false,
            })
            .map(|row| &row.key)
            .collect();
        let answered_offers = state
            .inputs
            .values()
            .filter(|i| !i.blocking && i.answered)
            .count();
        if cuts.len() > answered_offers {
            self.shared.violate(
                "sleep-cuts",
                id,
                format!(
                    "{} sleeps ended early ({cuts:?}) for {answered_offers} answered offer(s): an \
                     answer cuts only the next sleep",
                    cuts.len()
                ),
            );
        }
    }

    /// `tasks/get` through the router shows the last status meta under
    /// `_meta["io.durable-mcp-server/status"]` (absent while none was published).
    fn check_wire_meta(&mut self, id: &str, expected: Option<&Value>) {
        if self.task_state(id).is_none() {
            return; // purged
        }
        let server = McpServer::new("sim", "0.0.0").task(self.tool.clone());
        let router = Router::new(server, Rc::clone(&self.engine));
        let client = McpClient::new("http://127.0.0.1:1/mcp");
        let (body, headers) = client.build("tasks/get", json!({ "taskId": id }), true);
        let request = HttpRequest {
            method: "POST".to_owned(),
            headers: Headers::new(headers),
            body: body.to_string().into_bytes(),
        };
        let mut handled = std::pin::pin!(router.handle(request));
        let mut context = Context::from_waker(Waker::noop());
        let Poll::Ready(response) = handled.as_mut().poll(&mut context) else {
            self.shared
                .violate("status-meta-wire", id, "tasks/get did not answer at once");
            return;
        };
        let answer = response.json_body();
        let got = answer["result"]["_meta"].get(STATUS_META_KEY);
        if got != expected {
            self.shared.violate(
                "status-meta-wire",
                id,
                format!(
                    "tasks/get shows _meta[{STATUS_META_KEY:?}] = {got:?}, the last published meta \
                     is {expected:?} (answer: {answer})"
                ),
            );
        }
    }

    fn final_checks(&mut self) {
        let ended: BTreeMap<String, ChildOutcome> = self
            .parents
            .keys()
            .filter_map(|id| Some((id.clone(), self.shared.ended(id)?)))
            .collect();
        for id in self.ids.clone() {
            let id = id.as_str();
            let Some(state) = self.state_or_last(id) else {
                // A child exists once its parent's body reaches its start, which it need not
                // (`child-lost` checks one whose start says it does).
                if !self.parents.contains_key(id) {
                    self.shared
                        .violate("not-finished", id, "the task was never created");
                }
                continue;
            };
            let task = &state.task;
            if !task.status.is_terminal() {
                self.shared.violate(
                    "not-finished",
                    id,
                    format!("the task is still {} at the end", task.status),
                );
                continue;
            }
            if task.parent.as_ref().is_some_and(|link| !link.notified) {
                self.shared.violate(
                    "child-unnotified",
                    id,
                    format!(
                        "the child ended {} and the world ran quiet, but its parent was never \
                         told",
                        task.status
                    ),
                );
            }
            // The rules refuse the code deployed under it: `check_journal_reached` judged it.
            let watch = self.shared.deploy_watch(id);
            if watch.is_some_and(|w| w.judgement.refused.is_some()) {
                continue;
            }
            let program = &self.programs[id];
            let expected = match model(id, program, &self.shared.seen(id), &ended) {
                Ok(expected) => expected,
                Err(key) => {
                    if task.status == TaskStatus::Completed {
                        self.shared.violate(
                            "final-result",
                            id,
                            format!("the body completed without passing {key:?}"),
                        );
                    }
                    continue;
                }
            };
            match (task.status, &expected.result) {
                (TaskStatus::Completed, None) => self.shared.violate(
                    "explicit-nested-step",
                    id,
                    format!(
                        "a cx.step inside a step closure must fail the task with an engine \
                         error; the task completed with {:?}",
                        task.result
                    ),
                ),
                (TaskStatus::Completed, Some(want)) => {
                    let got: Option<Value> = task
                        .result
                        .as_deref()
                        .and_then(|r| serde_json::from_str(r).ok());
                    if got.as_ref() != Some(want) {
                        self.shared.violate(
                            "final-result",
                            id,
                            format!("the result is {got:?}, the model says {want}"),
                        );
                    }
                    if task.status_message != expected.status_message {
                        self.shared.violate(
                            "status",
                            id,
                            format!(
                                "the status message is {:?}, the model says {:?}",
                                task.status_message, expected.status_message
                            ),
                        );
                    }
                    self.check_wire_meta(id, expected.status_meta.as_ref());
                    let meta: Option<Value> = task
                        .status_meta
                        .as_deref()
                        .and_then(|m| serde_json::from_str(m).ok());
                    if meta != expected.status_meta {
                        self.shared.violate(
                            "status",
                            id,
                            format!(
                                "the status meta is {meta:?}, the model says {:?}",
                                expected.status_meta
                            ),
                        );
                    }
                }
                (TaskStatus::Failed, Some(_))
                    if task.deadline().is_some_and(|deadline| {
                        task.finished_at.is_some_and(|at| at >= deadline)
                            && task
                                .error
                                .as_ref()
                                .is_some_and(|e| e.message.contains("expired"))
                    }) => {}
                (TaskStatus::Failed, Some(_)) => self.shared.violate(
                    "task-failed",
                    id,
                    format!("the task failed: {:?}", task.error),
                ),
                _ => {}
            }
        }
    }
}
