//! The life of a task outside its body, as one sans-io state machine: what a wake-up does.
//!
//! A host keeps one wake-up per task. When it fires, the host makes a [`Tick`] and carries out
//! its [`Command`]s one after another, answering each with the [`Event`] it produced and the
//! time, until the machine says the tick is over ([`Command::Sleep`] or [`Command::Gone`]).
//! The machine decides everything: whether to purge, expire, cancel, time out elicitations or
//! run the body; which guard each write carries; what to do when a concurrent writer came
//! first; how the body's outcome settles the task; and when the task wakes next. The host
//! decides nothing: it loads, applies, runs, deletes and schedules as told.
//!
//! | Phase     | Event                      | Next command                                    |
//! |-----------|----------------------------|-------------------------------------------------|
//! | start     | —                          | `Load(Full)` → loading                          |
//! | loading   | `Loaded(None)`             | `Gone` (the task does not exist)                |
//! | loading   | `Loaded(task)`, an ended child its parent has not heard from | `Notify` → notifying |
//! | loading   | `Loaded(task)`, terminal, past its purge time | `Purge` → purging            |
//! | loading   | `Loaded(task)`, expired, cancel asked (no compensation left, or its deadline passed), input timed out, or a dead claim (one this engine did not make) | `Apply` under the version read → writing |
//! | loading   | `Loaded(task)`, cancel asked and a compensation due | `Apply(claim)` → claiming (the body runs them) |
//! | loading   | `Loaded(task)`, a run is due | `Apply(claim)` under the version read → claiming |
//! | loading   | `Loaded(task)`, nothing due | `Sleep(next wake)`                             |
//! | writing   | `Applied(Done)`            | decide again on the task as written (as loading) |
//! | claiming  | `Applied(Done)`            | `Run(journal)` → running                        |
//! | writing, claiming | `Applied(Stale)`   | `Load(Full)` → loading                          |
//! | running   | `Ran(outcome)`             | `Load(Control)` → settling                      |
//! | settling  | `Loaded(task)`, still this lease | `Apply(settled row)` under version and lease → committing |
//! | settling  | `Loaded(task)`, another lease or gone | `Sleep(next wake)` / `Gone`          |
//! | committing | `Applied(Done)`, an ended child | decide again (as loading): `Notify`     |
//! | committing | `Applied(Done)`           | `Sleep(next wake)`                              |
//! | notifying | `Notified(true)`           | `Apply(link marked notified)` → writing         |
//! | notifying | `Notified(false)`          | `Sleep(now + NOTIFY_RETRY)`                     |
//! | committing | `Applied(Stale)`          | `Load(Control)` → settling                      |
//! | purging   | `Purged`                   | `Gone`                                          |
//!
//! Every `Applied(Stale)` counts as a conflict: another writer made progress. After
//! [`MAX_CONFLICTS`] of them in one tick the machine gives up with an error, and the host's
//! wake-up tries again later. A body that stopped because the store failed settles nothing:
//! the tick ends with that error, and the claim's redelivery anchor runs the body again.

mod decide;
mod settle;

use std::time::Duration;

use self::decide::{Due, claim, decide};
use self::settle::{settle_guard, settled_record};
use super::child::{ChildOutcome, undelivered};
use super::error::EngineError;
use super::journal::{Applied, Guard, LoadScope, TaskState, Write};
use super::limits::Limits;
use super::outcome::{BodyOutcome, End, Suspension};
use super::schedule::{RunReason, next_wake};
use super::task::ParentLink;
use super::time::Timestamp;
use super::trace;

/// How many writes of one tick (or one control-plane operation) may find that a concurrent
/// writer came first before it gives up. Each conflict means another writer made progress.
pub const MAX_CONFLICTS: usize = 64;

/// How soon an ended child task tries again to tell a parent it could not reach.
pub const NOTIFY_RETRY: Duration = Duration::from_secs(2);

/// What the host does next for the tick.
#[derive(Clone, Debug, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per step of a tick, moved once; boxing buys nothing"
)]
pub enum Command {
    /// Read the task's rows (`None` if it does not exist) and answer [`Event::Loaded`].
    Load(LoadScope),
    /// Apply `writes` atomically under `guard` and answer [`Event::Applied`].
    Apply {
        /// What the task row must still be.
        guard: Guard,
        /// The writes, in order.
        writes: Vec<Write>,
    },
    /// Run the body of this claimed journal (the task and all its rows, as the store holds
    /// them) and answer [`Event::Ran`].
    Run(TaskState),
    /// Tell the parent task of this ended child how it ended (through the host's task route,
    /// `TaskRoute::child_ended`) and answer [`Event::Notified`].
    Notify {
        /// The parent, and the key it started the child under.
        parent: ParentLink,
        /// How the child ended.
        outcome: ChildOutcome,
    },
    /// Delete every row of the task and answer [`Event::Purged`].
    Purge,
    /// The tick is over: set the task's wake-up to this time (`None`: nothing will happen to
    /// it by itself).
    Sleep(Option<Timestamp>),
    /// The tick is over and the task has no rows (it was just purged, or never existed): drop
    /// its wake-up, and tell the listing index `list_scope` (the purged task was listed there)
    /// that it is gone.
    Gone {
        /// The listing the purged task was in, if any.
        list_scope: Option<String>,
    },
}

/// What the host reports after carrying out a [`Command`].
#[derive(Clone, Debug, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per step of a tick, moved once; boxing buys nothing"
)]
pub enum Event {
    /// The answer to [`Command::Load`].
    Loaded(Option<TaskState>),
    /// The answer to [`Command::Apply`].
    Applied(Applied),
    /// The answer to [`Command::Run`].
    Ran(BodyOutcome),
    /// The answer to [`Command::Purge`].
    Purged,
    /// The answer to [`Command::Notify`]: whether the parent took the outcome.
    Notified(bool),
}

/// One tick of one task: from its wake-up to its next (see the [module](self) docs).
#[derive(Debug)]
pub struct Tick {
    task_id: String,
    lease: Duration,
    limits: Limits,
    own_claim: Option<u64>,
    conflicts: usize,
    phase: Phase,
}

#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per step of a tick, moved once; boxing buys nothing"
)]
enum Phase {
    /// Waiting for a full load, to decide what is due.
    Loading,
    /// Waiting for writes decided on `state` to be applied.
    Writing {
        state: TaskState,
        guard: Guard,
        writes: Vec<Write>,
        then: AfterWrite,
    },
    /// Waiting for the body of the activation whose lease this is.
    Running(Lease),
    /// Waiting for the current row to settle the body's outcome against.
    Settling(Settlement),
    /// Waiting for the parent to take the outcome of the ended child `state`.
    Notifying(TaskState),
    /// Waiting for the rows to be deleted; the task was listed in `list_scope`.
    Purging { list_scope: Option<String> },
    /// The tick is over.
    Over,
}

/// What follows a write once it is applied.
#[derive(Debug)]
enum AfterWrite {
    /// Decide again on the task as written.
    Decide,
    /// Run the body: the write was a claim, made because of `reason`.
    Run { reason: RunReason },
    /// Sleep until the next wake: the write settled the activation.
    Rest(Settlement),
}

/// The lease of a claimed activation.
#[derive(Clone, Copy, Debug)]
struct Lease {
    generation: u64,
    /// The redelivery anchor the claim set.
    anchor: Option<Timestamp>,
}

#[derive(Debug)]
struct Settlement {
    lease: Lease,
    outcome: BodyOutcome,
}

impl Tick {
    /// A tick of the task `task_id`, whose claims hold a lease of `lease` and whose results
    /// are checked against `limits`.
    pub fn new(task_id: impl Into<String>, lease: Duration, limits: Limits) -> Self {
        Tick {
            task_id: task_id.into(),
            lease,
            limits,
            own_claim: None,
            conflicts: 0,
            phase: Phase::Loading,
        }
    }

    /// The claim this tick's engine made on the task and has not seen settle, by its
    /// generation, if any. A claim in the task's row of any other generation was made by an
    /// engine that is gone (its host died or restarted): its activation runs nowhere, so it is
    /// run again now rather than when its lease runs out. Without one, every claim the row
    /// holds is such a dead claim.
    #[must_use]
    pub fn with_own_claim(mut self, generation: Option<u64>) -> Self {
        self.own_claim = generation;
        self
    }

    /// The first command.
    pub fn start(&self) -> Command {
        Command::Load(LoadScope::Full)
    }

    /// Takes the host's answer to the last command, given at `now`, and returns the next
    /// command. An error ends the tick: the host's wake-up should try again later.
    ///
    /// # Panics
    ///
    /// If `event` does not answer the last command (a bug of the host).
    pub fn handle(&mut self, event: Event, now: Timestamp) -> Result<Command, EngineError> {
        match (std::mem::replace(&mut self.phase, Phase::Over), event) {
            (Phase::Loading, Event::Loaded(None)) => Ok(Command::Gone { list_scope: None }),
            (Phase::Loading, Event::Loaded(Some(state))) => Ok(self.decide(state, now)),
            (
                Phase::Writing {
                    mut state,
                    guard,
                    writes,
                    then,
                },
                Event::Applied(applied),
            ) => {
                if applied == Applied::Stale {
                    return self.after_conflict(then);
                }
                if matches!(then, AfterWrite::Decide) {
                    trace::written(&state, &writes);
                }
                state.apply_guarded(guard, &writes);
                match &then {
                    AfterWrite::Run { reason } => trace::activation_started(&state.task, reason),
                    AfterWrite::Rest(settlement) => {
                        trace::activation_ended(&state, &settlement.outcome);
                    }
                    AfterWrite::Decide => {}
                }
                Ok(match then {
                    AfterWrite::Decide => self.decide(state, now),
                    AfterWrite::Run { .. } => {
                        self.phase = Phase::Running(Lease {
                            generation: state.task.generation,
                            anchor: state.task.next_run_at,
                        });
                        Command::Run(state)
                    }
                    AfterWrite::Rest(_) if undelivered(&state.task).is_some() => {
                        self.decide(state, now)
                    }
                    AfterWrite::Rest(_) => Command::Sleep(next_wake(&state)),
                })
            }
            (Phase::Running(lease), Event::Ran(outcome)) => {
                if let BodyOutcome::Stopped(End {
                    suspension: Suspension::StoreUnavailable(message),
                    ..
                }) = outcome
                {
                    // Nothing can be settled; the claim's redelivery anchor runs the body again.
                    return Err(EngineError::Store(message));
                }
                self.phase = Phase::Settling(Settlement { lease, outcome });
                Ok(Command::Load(LoadScope::Control))
            }
            (Phase::Settling(settlement), Event::Loaded(current)) => {
                Ok(self.settle(settlement, current, now))
            }
            (Phase::Notifying(state), Event::Notified(taken)) => Ok(if taken {
                if let Some(parent) = &state.task.parent {
                    trace::parent_notified(&state.task, &parent.task_id, true);
                }
                let mut task = state.task.clone();
                if let Some(parent) = &mut task.parent {
                    parent.notified = true;
                }
                self.write(state, vec![Write::PutTask(task)], AfterWrite::Decide)
            } else {
                if let Some(parent) = &state.task.parent {
                    trace::parent_notified(&state.task, &parent.task_id, false);
                }
                Command::Sleep(Some(now.saturating_add(NOTIFY_RETRY)))
            }),
            (Phase::Purging { list_scope }, Event::Purged) => {
                trace::task_purged(&self.task_id);
                Ok(Command::Gone { list_scope })
            }
            (phase, event) => panic!(
                "the tick of task {:?} got {event:?} while {phase:?}: the host answered a \
                 command it was not given",
                self.task_id
            ),
        }
    }

    /// What is due for `state`, as a command.
    fn decide(&mut self, state: TaskState, now: Timestamp) -> Command {
        let due = decide(&state, now, self.own_claim);
        match due {
            Due::Purge => {
                self.phase = Phase::Purging {
                    list_scope: state.task.list_scope.clone(),
                };
                Command::Purge
            }
            Due::Notify => {
                let (parent, outcome) =
                    undelivered(&state.task).expect("decided on an undelivered outcome");
                let command = Command::Notify {
                    parent: parent.clone(),
                    outcome,
                };
                self.phase = Phase::Notifying(state);
                command
            }
            Due::Write(writes) => self.write(state, writes, AfterWrite::Decide),
            Due::Run(reason) => {
                let claimed = claim(&state, now, self.lease);
                self.write(
                    state,
                    vec![Write::PutTask(claimed)],
                    AfterWrite::Run { reason },
                )
            }
            Due::Nothing => Command::Sleep(next_wake(&state)),
        }
    }

    /// Writes decided on `state` as loaded: they apply only if no one wrote the row since.
    fn write(&mut self, state: TaskState, writes: Vec<Write>, then: AfterWrite) -> Command {
        let guard = Guard {
            version: Some(state.task.version),
            generation: None,
        };
        self.write_under(state, guard, writes, then)
    }

    fn write_under(
        &mut self,
        state: TaskState,
        guard: Guard,
        writes: Vec<Write>,
        then: AfterWrite,
    ) -> Command {
        let command = Command::Apply {
            guard,
            writes: writes.clone(),
        };
        self.phase = Phase::Writing {
            state,
            guard,
            writes,
            then,
        };
        command
    }

    /// The settlement of the body's outcome on the row as it is now.
    fn settle(
        &mut self,
        settlement: Settlement,
        current: Option<TaskState>,
        now: Timestamp,
    ) -> Command {
        let Some(current) = current else {
            return Command::Gone { list_scope: None };
        };
        let lease = settlement.lease;
        if current.task.generation != lease.generation {
            // Another activation or a terminal transition owns the task now.
            return Command::Sleep(next_wake(&current));
        }
        let record = settled_record(
            &current,
            lease.anchor,
            &settlement.outcome,
            &self.limits,
            now,
        );
        let Some(record) = record else {
            return Command::Sleep(next_wake(&current));
        };
        let guard = settle_guard(&current.task, lease.generation);
        let writes = vec![Write::PutTask(record)];
        self.write_under(current, guard, writes, AfterWrite::Rest(settlement))
    }

    /// A write found the row changed: read it again and go on from there, unless the row has
    /// changed too often.
    fn after_conflict(&mut self, then: AfterWrite) -> Result<Command, EngineError> {
        self.conflicts += 1;
        if self.conflicts >= MAX_CONFLICTS {
            return Err(conflict(&self.task_id));
        }
        Ok(match then {
            AfterWrite::Decide | AfterWrite::Run { .. } => {
                self.phase = Phase::Loading;
                Command::Load(LoadScope::Full)
            }
            AfterWrite::Rest(settlement) => {
                self.phase = Phase::Settling(settlement);
                Command::Load(LoadScope::Control)
            }
        })
    }
}

/// The error of a write that kept finding the task changed by others.
pub fn conflict(task_id: &str) -> EngineError {
    EngineError::Store(format!(
        "task {task_id:?} kept changing under {MAX_CONFLICTS} attempts to write it"
    ))
}

#[cfg(test)]
mod tests;
