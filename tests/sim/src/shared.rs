//! The outside world the task bodies touch: closure execution counters, what bodies saw,
//! answers sent, and the violations found. It outlives every engine of a run (a restart
//! drops the engine, not the world).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::rc::Rc;

use durable_mcp::TaskStatus;
use durable_mcp::http::Clock;
use durable_mcp::store::Store;
use durable_mcp::store::{ChildOutcome, LoadScope, StepKind, StepRow, StepStatus, TaskState};
use durable_mcp::testing::VirtualClock;

use crate::program::{Judgement, Program, child_token};

/// An invariant that did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant (a short stable tag).
    pub kind: &'static str,
    /// The task it concerns.
    pub task: String,
    /// What was seen.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] task {}: {}", self.kind, self.task, self.detail)
    }
}

/// A task id and a journal key.
pub type TaskKey = (String, String);

/// What the sim knows of a step's closure executions.
#[derive(Clone, Debug, Default)]
struct Executions {
    /// How many times the closure started.
    count: u32,
    /// The disruption epochs (the host's, the task's) when it last started.
    last_epoch: (u64, u64),
    /// How many of its executions are running now.
    live: u32,
    /// How many executions went unrecorded with a disruption to explain it.
    excused: u32,
}

/// The world shared by the bodies, the store wrapper and the driver of one run.
#[allow(missing_debug_implementations)] // holds a store trait object
pub struct Shared {
    /// The store under the fault injector: the truth, read without faults.
    pub inner: Rc<dyn Store>,
    /// Virtual time.
    pub clock: Rc<VirtualClock>,
    /// The program of each task, by task id.
    pub programs: RefCell<BTreeMap<String, Rc<Program>>>,
    /// Bumped by every fault, crash and restart: an attempt that started before a bump may
    /// have been lost to it, and may run again.
    epoch: Cell<u64>,
    /// Bumped by a failed write of one task: only that task's activation stops.
    task_epochs: RefCell<BTreeMap<String, u64>>,
    executions: RefCell<BTreeMap<TaskKey, Executions>>,
    observations: RefCell<BTreeMap<TaskKey, String>>,
    /// Tasks whose activation saw a cancellation in a write's answer.
    cancel_observed: RefCell<BTreeSet<String>>,
    /// The lease generation of each task when its cancellation was recorded: an activation
    /// claimed after it must not start a step.
    cancelled_at: RefCell<BTreeMap<String, u64>>,
    /// The responses sent to each input key.
    answers: RefCell<BTreeMap<TaskKey, Vec<String>>>,
    violations: RefCell<Vec<Violation>>,
    closure_runs: Cell<u64>,
    /// The tasks a compensation ran for.
    compensated: RefCell<BTreeSet<String>>,
    /// The tasks the store inserted (not found existing), each once.
    inserted: RefCell<BTreeSet<String>>,
    /// The child starts whose join returned in a body: (parent, key).
    joins: RefCell<BTreeSet<TaskKey>>,
    /// The keys each task's body reached in its last run that returned.
    returned: RefCell<BTreeMap<String, BTreeSet<String>>>,
    /// The tasks a deploy changed the code under, with what the rules make of it.
    deploys: RefCell<BTreeMap<String, DeployWatch>>,
}

/// A task a deploy changed the code under: its journal then, and what the rules of a journal
/// that must be reached make of the new code over it.
#[derive(Clone, Debug, Default)]
pub struct DeployWatch {
    /// The body keys its journal held at the deploy.
    pub journal: BTreeSet<String>,
    /// The judgement of the new code over that journal.
    pub judgement: Judgement,
    /// Keys whose closures must not start after the deploy (the new side of a change the
    /// task, having recorded the old one, does not take).
    pub forbidden: BTreeSet<String>,
}

/// The most violations kept per run.
const MAX_VIOLATIONS: usize = 32;

impl Shared {
    /// A world over `inner` on `clock`.
    pub fn new(inner: Rc<dyn Store>, clock: Rc<VirtualClock>) -> Rc<Self> {
        Rc::new(Shared {
            inner,
            clock,
            programs: RefCell::default(),
            epoch: Cell::new(0),
            task_epochs: RefCell::default(),
            executions: RefCell::default(),
            observations: RefCell::default(),
            cancel_observed: RefCell::default(),
            cancelled_at: RefCell::default(),
            compensated: RefCell::default(),
            inserted: RefCell::default(),
            joins: RefCell::default(),
            returned: RefCell::default(),
            deploys: RefCell::default(),
            answers: RefCell::default(),
            violations: RefCell::default(),
            closure_runs: Cell::new(0),
        })
    }

    /// The program of `task`.
    pub fn program(&self, task: &str) -> Option<Rc<Program>> {
        self.programs.borrow().get(task).cloned()
    }

    /// Records a violation.
    pub fn violate(&self, kind: &'static str, task: &str, detail: impl Into<String>) {
        let violation = Violation {
            kind,
            task: task.to_owned(),
            detail: detail.into(),
        };
        let mut violations = self.violations.borrow_mut();
        // The checks run after every event: a standing problem is reported once.
        if violations.len() < MAX_VIOLATIONS && !violations.contains(&violation) {
            violations.push(violation);
        }
    }

    /// The violations so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.violations.borrow().clone()
    }

    /// How many step closures started.
    pub fn closure_runs(&self) -> u64 {
        self.closure_runs.get()
    }

    /// How many child starts were joined (their join returned in a body).
    pub fn joins(&self) -> u64 {
        self.joins.borrow().len() as u64
    }

    /// The store inserted task `id`: a task is created once (a replayed start finds its child
    /// rather than creating another, and a purged task is not created again).
    pub fn task_inserted(&self, id: &str) {
        if !self.inserted.borrow_mut().insert(id.to_owned()) {
            self.violate(
                "task-recreated",
                id,
                "the task was inserted a second time, to run its body again",
            );
        }
    }

    /// How task `id` ended, if it has (as the store holds it now).
    pub fn ended(&self, id: &str) -> Option<ChildOutcome> {
        let state = self.inner.load(id, LoadScope::Control).ok().flatten()?;
        ChildOutcome::of(&state.task)
    }

    /// The join of the child `child`, started by `task` under `key`, returned `token`: the
    /// child ended, as the token says (a cancelled task's cleanup leaves the start's row to the
    /// child's outcome, recording its stop under [`stopped_key`]).
    pub fn check_join(&self, task: &str, key: &str, child: &str, token: &str) {
        self.joins
            .borrow_mut()
            .insert((task.to_owned(), key.to_owned()));
        match self.ended(child) {
            None => self.violate(
                "join-before-end",
                task,
                format!(
                    "the join of child {key:?} ({child}) returned {token}, the child has not ended"
                ),
            ),
            Some(end) if child_token(key, &end) != token => self.violate(
                "child-outcome",
                task,
                format!(
                    "the join of child {key:?} ({child}) returned {token}, the child ended as {}",
                    child_token(key, &end)
                ),
            ),
            Some(_) => {}
        }
    }

    /// A run of `task`'s body returned, having reached the journal keys `reached`.
    pub fn body_returned(&self, task: &str, reached: BTreeSet<String>) {
        self.returned.borrow_mut().insert(task.to_owned(), reached);
    }

    /// The keys the last run of `task`'s body that returned reached.
    pub fn reached_at_return(&self, task: &str) -> BTreeSet<String> {
        self.returned
            .borrow()
            .get(task)
            .cloned()
            .unwrap_or_default()
    }

    /// A deploy changed the code under `task`.
    pub fn deployed(&self, task: &str, watch: DeployWatch) {
        self.deploys.borrow_mut().insert(task.to_owned(), watch);
    }

    /// What a deploy under `task` found, if one changed its code.
    pub fn deploy_watch(&self, task: &str) -> Option<DeployWatch> {
        self.deploys.borrow().get(task).cloned()
    }

    /// The side `cx.patched(id)` takes in `task` where no record decides it: the new one,
    /// unless a deploy changed the code under the task with recorded ground ahead of the gate.
    pub fn gate_expected(&self, task: &str, id: &str) -> bool {
        let deploys = self.deploys.borrow();
        let side = deploys.get(task).and_then(|w| w.judgement.gates.get(id));
        side.copied().unwrap_or(true)
    }

    /// The host died or restarted: every attempt in flight may be lost.
    pub fn disrupt(&self) {
        self.epoch.set(self.epoch.get() + 1);
    }

    /// A write of `task` failed: the attempts in flight in its activation may be lost.
    pub fn disrupt_task(&self, task: &str) {
        *self
            .task_epochs
            .borrow_mut()
            .entry(task.to_owned())
            .or_default() += 1;
    }

    /// An activation of `task` saw its cancellation in a write's answer.
    pub fn cancel_seen(&self, task: &str) {
        self.cancel_observed.borrow_mut().insert(task.to_owned());
    }

    /// The cancellation of `task` was recorded while its lease was `generation`.
    pub fn cancel_recorded(&self, task: &str, generation: u64) {
        self.cancelled_at
            .borrow_mut()
            .entry(task.to_owned())
            .or_insert(generation);
    }

    /// The lease generation of `task` when its cancellation was recorded, if it was.
    pub fn cancel_generation(&self, task: &str) -> Option<u64> {
        self.cancelled_at.borrow().get(task).copied()
    }

    /// A response sent to `key` of `task`.
    pub fn answer_sent(&self, task: &str, key: &str, response: &str) {
        self.answers
            .borrow_mut()
            .entry((task.to_owned(), key.to_owned()))
            .or_default()
            .push(response.to_owned());
    }

    /// Whether `response` was sent to `key` of `task`.
    pub fn was_sent(&self, task: &str, key: &str, response: &str) -> bool {
        self.answers
            .borrow()
            .get(&(task.to_owned(), key.to_owned()))
            .is_some_and(|sent| sent.iter().any(|r| r == response))
    }

    /// What the body saw for each key of `task`, first observation first.
    pub fn seen(&self, task: &str) -> BTreeMap<String, String> {
        self.observations
            .borrow()
            .iter()
            .filter(|((t, _), _)| t == task)
            .map(|((_, key), token)| (key.clone(), token.clone()))
            .collect()
    }

    /// A first (not replayed) read of `key` saw `token`: what later replays must return, once
    /// its row is durable. A read whose row was never stored (a failed write, a torn batch)
    /// is simply read again, and may see something else then.
    pub fn observe_first_read(&self, task: &str, key: &str, token: &str) {
        self.observations
            .borrow_mut()
            .insert((task.to_owned(), key.to_owned()), token.to_owned());
    }

    /// Whether the journal of `task` holds a finished step row under `key`.
    pub fn recorded(&self, task: &str, key: &str) -> bool {
        let journal = self.inner.load(task, LoadScope::Full).ok().flatten();
        journal
            .and_then(|j| {
                j.steps
                    .get(key)
                    .map(|row| row.status != StepStatus::Pending)
            })
            .unwrap_or(false)
    }

    /// The body saw `token` for `key`: it must be what every earlier run saw.
    pub fn observe(&self, task: &str, key: &str, token: &str) {
        let mut observations = self.observations.borrow_mut();
        let entry = (task.to_owned(), key.to_owned());
        match observations.get(&entry) {
            Some(first) if first != token => {
                let detail =
                    format!("a replay of {key:?} returned {token}, an earlier run saw {first}");
                drop(observations);
                self.violate("replay-value", task, detail);
            }
            Some(_) => {}
            None => {
                observations.insert(entry, token.to_owned());
            }
        }
    }

    /// A compensation of `task` starts: only once the task's cancellation was recorded.
    pub fn compensation_starts(&self, task: &str, key: &str) {
        self.compensated.borrow_mut().insert(task.to_owned());
        if !self.cancelled_at.borrow().contains_key(task) {
            self.violate(
                "compensation-without-cancel",
                task,
                format!("compensation {key:?} ran, but nobody cancelled the task"),
            );
        }
    }

    /// Forgets that compensations of `task` ran: a torn batch lost the rows that recorded
    /// its cleanup (the store this sim models may lose step rows written before a closure ran,
    /// so a compensation, like any step, may run and leave no trace).
    pub fn forget_compensations(&self, task: &str) {
        self.compensated.borrow_mut().remove(task);
    }

    /// Checks a task that just finished: a cancelled one ran every compensation it registered
    /// and cancelled every child it had not heard from, unless its cleanup's deadline passed
    /// first or code deployed since does not reach its journal (and its status message says
    /// so); one that completed or failed ran none.
    pub fn check_cleanup(&self, task: &str, state: &TaskState) {
        let unrun: Vec<&str> = state
            .pending_cleanup()
            .chain(unstopped_children(state))
            .map(|row| row.key.as_str())
            .collect();
        // The message names what was left of each kind.
        let says = |what: &str, left: bool| {
            let message = state.task.status_message.as_deref().unwrap_or_default();
            !left || message.contains(what)
        };
        let said = says("not run", state.pending_cleanup().next().is_some())
            && says("not cancelled", unstopped_children(state).next().is_some());
        // Code deployed under the task that no longer reaches its journal may not reach the
        // registration of a compensation either: the closure is not there to run.
        let unreachable = self
            .deploys
            .borrow()
            .get(task)
            .is_some_and(|watch| watch.judgement.refused.is_some())
            && unstopped_children(state).next().is_none();
        match state.task.status {
            TaskStatus::Cancelled if !unrun.is_empty() => {
                let deadline = state.cleanup_deadline();
                let finished = state.task.finished_at;
                let passed = deadline.is_some_and(|d| finished.is_some_and(|f| f >= d));
                if !said || !(passed || unreachable) {
                    self.violate(
                        "cleanup-unfinished",
                        task,
                        format!(
                            "cancelled at {finished:?} with {unrun:?} not run before the cleanup's \
                             deadline {deadline:?} (status message {:?})",
                            state.task.status_message
                        ),
                    );
                }
            }
            // Expiry ends a task whatever it does, its cleanup too.
            TaskStatus::Completed | TaskStatus::Failed
                if self.compensated.borrow().contains(task) && !expired(state) =>
            {
                self.violate(
                    "compensation-without-cancel",
                    task,
                    format!(
                        "the task ended {} after a compensation ran",
                        state.task.status
                    ),
                );
            }
            _ => {}
        }
    }

    /// A step closure of `task` starts for `key`: checks that the step is not recorded, that
    /// an earlier attempt was only lost to a disruption, that no other attempt runs, and that
    /// no cancellation was observed. Returns the execution's number (from 1) and a guard that
    /// marks it ended when dropped.
    pub fn begin_execution(self: &Rc<Self>, task: &str, key: &str) -> (u32, LiveExecution) {
        self.closure_runs.set(self.closure_runs.get() + 1);
        let now = self.clock.now();
        let journal = self.inner.load(task, LoadScope::Full).ok().flatten();
        let row = journal.as_ref().and_then(|j| j.steps.get(key)).cloned();
        let recorded_attempts = match &row {
            Some(row) if row.kind == StepKind::Do => row.attempt,
            _ => 0,
        };
        if let Some(row) = &row {
            match row.status {
                StepStatus::Completed | StepStatus::Failed => self.violate(
                    "recorded-step-ran-again",
                    task,
                    format!(
                        "the closure of {key:?} ran although the journal held it {} ({:?})",
                        row.status.as_str(),
                        row.result
                    ),
                ),
                StepStatus::Pending if row.next_attempt_at.is_some_and(|at| at > now) => self
                    .violate(
                        "retry-before-backoff",
                        task,
                        format!(
                            "{key:?} ran at {} before its retry time {:?}",
                            now.0, row.next_attempt_at
                        ),
                    ),
                StepStatus::Pending => {}
            }
        }
        let cancelled_at = self.cancelled_at.borrow().get(task).copied();
        // Compensations run after the cancel, by design; `compensation_starts` checks them.
        let compensation = key.starts_with("$cleanup:");
        if let (Some(at), Some(journal), false) = (cancelled_at, &journal, compensation)
            && journal.task.generation > at
        {
            self.violate(
                "cancel-not-observed",
                task,
                format!(
                    "{key:?} started in an activation (lease {}) claimed after the cancellation \
                     was recorded (lease {at})",
                    journal.task.generation
                ),
            );
        }
        if let Some(watch) = self.deploys.borrow().get(task)
            && !key.starts_with('$')
        {
            let new_ground = !watch.journal.contains(key);
            if watch.forbidden.contains(key) {
                self.violate(
                    "journal-skipped",
                    task,
                    format!(
                        "the closure of {key:?}, new code in place of recorded ground, ran after \
                         the deploy"
                    ),
                );
            } else if let Some(refusal) = &watch.judgement.refused
                && new_ground
            {
                self.violate(
                    "journal-skipped",
                    task,
                    format!(
                        "the closure of {key:?} ran after a deploy whose code does not reach \
                         the recorded {:?}: new ground must not run",
                        refusal.keys
                    ),
                );
            }
        }
        if self.cancel_observed.borrow().contains(task) && !compensation {
            self.violate(
                "cancel-not-observed",
                task,
                format!("{key:?} started after the activation saw the task's cancellation"),
            );
        }
        let task_epoch = self.task_epochs.borrow().get(task).copied().unwrap_or(0);
        let epoch = (self.epoch.get(), task_epoch);
        let entry = (task.to_owned(), key.to_owned());
        let mut executions = self.executions.borrow_mut();
        let record = executions.entry(entry.clone()).or_default();
        let mut problems = Vec::new();
        if record.live > 0 {
            problems.push((
                "concurrent-attempts",
                format!("{key:?} started while another attempt of it runs"),
            ));
        }
        // Executions the journal does not show: each must be explained by a disruption
        // that happened after it started.
        let lost = record.count.saturating_sub(recorded_attempts);
        if lost > record.excused {
            if record.last_epoch == epoch {
                problems.push((
                    "rerun-without-crash",
                    format!(
                        "{key:?} runs for the {} time, the journal holds {recorded_attempts} \
                         attempt(s), and no fault, crash or restart happened since its last \
                         attempt started: an attempt was dropped unrecorded",
                        record.count + 1
                    ),
                ));
            }
            record.excused = lost;
        }
        record.count += 1;
        record.last_epoch = epoch;
        record.live += 1;
        let count = record.count;
        drop(executions);
        for (kind, detail) in problems {
            self.violate(kind, task, detail);
        }
        (
            count,
            LiveExecution {
                shared: Rc::clone(self),
                entry,
            },
        )
    }
}

/// Marks a running closure execution; ends it when dropped (returned, or dropped mid-way).
#[allow(missing_debug_implementations)]
pub struct LiveExecution {
    shared: Rc<Shared>,
    entry: TaskKey,
}

impl Drop for LiveExecution {
    fn drop(&mut self) {
        if let Some(record) = self.shared.executions.borrow_mut().get_mut(&self.entry) {
            record.live = record.live.saturating_sub(1);
        }
    }
}

/// The key under which a cancelled task's cleanup records that it asked the child started
/// under `key` to stop (`durable_mcp`'s `STOPPED_PREFIX`, which it does not export).
pub fn stopped_key(key: &str) -> String {
    format!("$stopped:{key}")
}

/// The children `state` started, has not heard back from and has not asked to stop: pending
/// `child` rows without a [`stopped_key`] mark (read here rather than through
/// `TaskState::pending_children`, the engine's own reading, which this checks).
pub fn unstopped_children(state: &TaskState) -> impl Iterator<Item = &StepRow> {
    state.steps.values().filter(|row| {
        row.kind == StepKind::Child
            && row.status == StepStatus::Pending
            && !state.steps.contains_key(&stopped_key(&row.key))
    })
}

/// Whether the task failed because its time to live ran out.
pub fn expired(state: &TaskState) -> bool {
    let message = state
        .task
        .error
        .as_ref()
        .map(|error| error.message.as_str());
    message.is_some_and(|message| message.starts_with("task expired"))
}
