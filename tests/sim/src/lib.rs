//! A deterministic simulator of the durable-mcp engine.
//!
//! From a seed it generates task bodies from a small grammar (steps that succeed, fail, panic
//! or time out; loops, helpers, nested steps, `try_join_all`, sleeps, elicitations, offers,
//! checks, status, child tasks of generated bodies, joined together), runs them through the
//! real [`durable_mcp::http::Engine`] on virtual time over a fault-injecting store (failed
//! writes, crashes before and after a write, torn step batches) on the memory or the SQLite
//! store, interleaves control-plane events (answers, cancels, a cancel then an answer before
//! the next activation, restarts, deploys of a changed body, duplicate, early and late ticks,
//! clock jumps), and checks invariants after every event against a model that
//! runs the same body without faults:
//!
//! - a recorded step's closure never runs again, and no retry runs before its backoff;
//! - every replay of a key returns what the first run saw, and a step's value is the model's;
//!   `cx.idempotency_key(name)` names the key the next call of `name` gets;
//! - each journal key keeps one kind; a recorded step row and a first answer never change;
//! - a terminal task never changes, and is purged only once its retention is over;
//! - a non-terminal task always has a wake-up (or waits for input with no deadline), and the
//!   host is never asked to tick a task over and over without time moving;
//! - once an activation saw a cancellation, or after one was recorded, no step closure starts;
//!   an idle task's cancellation settles at once;
//! - a step re-runs only if a crash, a restart or a failed write of its task may have lost its
//!   attempt, and never runs twice at once;
//! - timestamps stay within what every host can hold; an offer's answer cuts one sleep;
//! - the final result, status message and meta equal the model's, and `tasks/get` through the
//!   router shows the meta under `_meta["io.durable-mcp-server/status"]`;
//! - a recorded cancel wins: a task whose cancel was recorded before the activation that ends
//!   it claimed it (as in the race of a cancel and an answer before the next activation)
//!   never ends `completed`;
//! - the journal must be reached: a task completes only from a run that reached every key
//!   its journal holds; under a changed body deployed while it is in flight, it is refused
//!   with an error naming the keys it no longer reaches (before any new step runs), or it
//!   runs as the rules say (a gated change keeps its old path);
//! - a child task is created once, after its parent recorded its start, and names its parent;
//!   a join returns only once the child ended, with how it ended, as the parent's row records
//!   it; a cancelled parent's cleanup leaves no child it had not heard from running on, and
//!   records each child it stops under `$stopped:<key>` (only once the parent's cancel was
//!   recorded), leaving the start's row to the child's own outcome; an ended child tells its
//!   parent, which then waits for it no more (unless it has ended).
//!
//! A failing seed is shrunk to a minimal event list and printed; `DURABLE_MCP_SIM_SEED=<seed>`
//! replays one seed with the `sim` binary, and `DURABLE_MCP_SIM_TRACE=1` prints what it does.

pub mod body;
pub mod program;
pub mod rng;
pub mod shared;
pub mod sim;
pub mod store;

use std::sync::Once;

pub use program::Grammar;
pub use shared::Violation;
pub use sim::{Config, Event, Outcome, Scenario, run};

/// Whether `DURABLE_MCP_SIM_TRACE` is set: the run then prints every event, store write,
/// load and poll to stderr.
pub fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("DURABLE_MCP_SIM_TRACE").is_some())
}

/// Keeps the planned panics of step closures off stderr (other panics print as usual).
pub fn quiet_planned_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let planned = info
                .payload()
                .downcast_ref::<String>()
                .is_some_and(|text| text == body::PLANNED_PANIC);
            if !planned {
                default(info);
            }
        }));
    });
}

/// Runs the scenario of `seed`.
pub fn run_seed(seed: u64, config: &Config) -> (Scenario, Outcome) {
    quiet_planned_panics();
    let scenario = Scenario::generate(seed, config);
    let outcome = run(&scenario);
    (scenario, outcome)
}

/// The scenario with as few events as still show a violation of kind `kind` (greedy removal
/// of ever smaller runs of events), trying at most `budget` runs.
pub fn shrink(scenario: &Scenario, kind: &str, budget: usize) -> Scenario {
    let mut best = scenario.clone();
    let mut runs = 0;
    let mut chunk = best.events.len().div_ceil(2).max(1);
    loop {
        let mut start = 0;
        while start < best.events.len() && runs < budget {
            let mut candidate = best.clone();
            let end = (start + chunk).min(candidate.events.len());
            candidate.events.drain(start..end);
            runs += 1;
            if run(&candidate).violations.iter().any(|v| v.kind == kind) {
                best = candidate;
            } else {
                start += chunk;
            }
        }
        if chunk == 1 || runs >= budget {
            return best;
        }
        chunk = chunk.div_ceil(2);
    }
}

/// Figures of many runs.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Seeds run.
    pub seeds: u64,
    /// Events played.
    pub events: u64,
    /// Store writes attempted.
    pub writes: u64,
    /// Faults injected.
    pub faults: u64,
    /// Of which: failed writes, crashes before a write, crashes after one, torn batches.
    pub faults_by_kind: [u64; 4],
    /// Step rows lost to torn batches.
    pub torn_rows: u64,
    /// Host restarts.
    pub restarts: u64,
    /// Step closures started.
    pub closure_runs: u64,
    /// Child tasks created.
    pub children: u64,
    /// Of which: ended completed, failed, cancelled.
    pub children_by_end: [u64; 3],
    /// Child starts whose join returned.
    pub joins: u64,
    /// Races of a cancel and an answer played (see [`Outcome::races`]).
    pub races: u64,
    /// Of which: nothing was left to do after the answer.
    pub bare_races: u64,
    /// Deploys, by change and gate (see [`Outcome::deploys`]).
    pub deploys: [[u64; 2]; 4],
    /// Of which: no task in flight, refused, old path kept, new code run.
    pub deploy_judgements: [u64; 4],
    /// Deploys under a task that had recorded the changed step.
    pub deploys_over_target: u64,
    /// Tasks that failed with the error of a journal not reached.
    pub refusals: u64,
    /// Violations found.
    pub violations: u64,
    /// Seeds with at least one violation.
    pub failing_seeds: Vec<u64>,
}

impl Totals {
    /// Adds one run.
    pub fn add(&mut self, seed: u64, outcome: &Outcome) {
        self.seeds += 1;
        self.events += outcome.events;
        self.writes += outcome.writes;
        self.faults += outcome.faults;
        for (total, n) in self.faults_by_kind.iter_mut().zip(outcome.faults_by_kind) {
            *total += n;
        }
        self.torn_rows += outcome.torn_rows;
        self.restarts += outcome.restarts;
        self.closure_runs += outcome.closure_runs;
        self.children += outcome.children;
        for (total, n) in self.children_by_end.iter_mut().zip(outcome.children_by_end) {
            *total += n;
        }
        self.joins += outcome.joins;
        self.races += outcome.races;
        self.bare_races += outcome.bare_races;
        for (total, n) in self.deploys.iter_mut().zip(outcome.deploys) {
            total[0] += n[0];
            total[1] += n[1];
        }
        for (total, n) in self
            .deploy_judgements
            .iter_mut()
            .zip(outcome.deploy_judgements)
        {
            *total += n;
        }
        self.deploys_over_target += outcome.deploys_over_target;
        self.refusals += outcome.refusals;
        self.violations += outcome.violations.len() as u64;
        if !outcome.violations.is_empty() {
            self.failing_seeds.push(seed);
        }
    }
}

/// A report of a failing seed: its first violation, shrunk to a minimal event list.
pub fn report(scenario: &Scenario, outcome: &Outcome, shrink_budget: usize) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let Some(first) = outcome.violations.first() else {
        return text;
    };
    let minimal = shrink(scenario, first.kind, shrink_budget);
    let replayed = run(&minimal);
    let store = if scenario.sqlite { "sqlite" } else { "memory" };
    let _ = writeln!(
        text,
        "seed {} ({store} store): {} violation(s); replay with DURABLE_MCP_SIM_SEED={}",
        scenario.seed,
        outcome.violations.len(),
        scenario.seed
    );
    for violation in &outcome.violations {
        let _ = writeln!(text, "  {violation}");
    }
    for (i, program) in scenario.programs.iter().enumerate() {
        let _ = writeln!(text, "  program of t{i}: {:?}", program.ops);
    }
    if let Some(deploy) = &scenario.deploy {
        let gate = if deploy.gated { "gated" } else { "ungated" };
        let _ = writeln!(
            text,
            "  deployed program of t0 ({:?}, {gate}): {:?}",
            deploy.change, deploy.program.ops
        );
    }
    let _ = writeln!(
        text,
        "  minimal events ({} of {}) still showing [{}]:",
        minimal.events.len(),
        scenario.events.len(),
        first.kind
    );
    for event in &minimal.events {
        let _ = writeln!(text, "    {event:?}");
    }
    for violation in replayed.violations.iter().filter(|v| v.kind == first.kind) {
        let _ = writeln!(text, "    -> {violation}");
    }
    text
}
