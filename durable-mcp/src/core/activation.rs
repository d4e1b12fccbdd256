//! One activation of a task body as a sans-io state machine.
//!
//! An [`Activation`] owns everything a replay decides with: the journal as this activation
//! has changed it, the task's step defaults and the limits on stored values, the occurrence
//! count of every name, the next sequence number, the cancel flag the store last reported, the
//! count of `status` calls, the step attempts it issued and has not heard back from, and the
//! reason the run stops. Each call of the body's API (`step`, `sleep`, `elicit`, ...) is one
//! method that returns a decision *and* updates the machine: the writes it decides are applied
//! to its own journal at once and queued for the store ([`take_writes`]), so no later decision
//! reads a view that misses them. The runtime's `TaskContext` is a thin async shell: it
//! serialises what the body gives, asks, sends the queued writes to the store, reports how that
//! went ([`committed`]), runs the step attempts it is given, and returns to the body or parks
//! it.
//!
//! Each decision reads the journal under the operation's key: a hit returns what was recorded
//! (a key recorded under another kind is non-determinism); a miss is new ground, where a
//! waiting cancellation is observed and the operation is recorded.
//!
//! A decision of [`Stop`] means the body must not go on past this point: the machine has
//! recorded why ([`Suspension`]). The activation ends when the body pauses with a reason
//! recorded and no step attempt running ([`end`]). In a concurrent body, a branch that waits
//! (a sleep, a retry backoff, an unanswered elicitation) stops only itself: the other branches
//! go on until the body pauses, and the attempts they started finish and are recorded; if any
//! attempt recorded a result after the wait, the body runs again at once ([`End::rerun`]). A
//! hand-off starts no new attempt, and any other reason ends the activation at once.
//!
//! [`take_writes`]: Activation::take_writes
//! [`committed`]: Activation::committed
//! [`end`]: Activation::end

mod attempts;
mod children;
pub mod draws;
mod rows;
#[cfg(test)]
mod tests;
mod values;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

pub use attempts::{Attempt, AttemptId};
use attempts::{Attempts, Issued};
pub use children::ChildStart;

use super::error::{Divergence, EngineError};
use super::journal::{Applied, Guard, InputRow, StepKind, StepRow, StepStatus, TaskState, Write};
use super::limits::Limits;
use super::outcome::{End, Suspension};
use super::own_keys::{OwnKey, is_own_key};
use super::retry::{RetryPolicy, jitter_fraction};
use super::step_failure::{StepFailure, StepFailureKind};
use super::time::{DurationError, Timestamp};
use super::trace;

/// The decision that the body stops here: its future stays pending and is dropped when the
/// activation ends. The machine has recorded why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop;

/// A decision of the machine: go on with a `T`, or stop.
pub type Decision<T> = Result<T, Stop>;

/// A value the body handed over, as the runtime serialised it (or why it could not).
pub type Serialised = Result<serde_json::Value, serde_json::Error>;

/// What an activation decides with besides the journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The task's retry policy, for steps that set none of their own.
    pub retry: RetryPolicy,
    /// How long a step attempt may run, for steps that set no timeout of their own.
    pub step_timeout: Duration,
    /// The limits on stored values.
    pub limits: Limits,
    /// When no new step attempt may start any more (a host's wall-clock limit), if ever.
    pub hand_off_at: Option<Timestamp>,
}

/// What a `step` does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepNext {
    /// Recorded: return this value (JSON text); the closure does not run.
    Replay(String),
    /// Recorded as failed: return this failure again.
    Failed(StepFailure),
    /// Run the closure once as this attempt, then report it with
    /// [`Activation::attempt_done`] (or [`Activation::attempt_abandoned`]).
    Run(Attempt),
}

/// How one attempt of a step's closure ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// It returned a value, already serialised and checked.
    Value(String),
    /// It failed.
    Error {
        /// What went wrong.
        message: String,
        /// Whether the policy may try again.
        retryable: bool,
        /// Whether it failed by outlasting the step's timeout.
        timed_out: bool,
    },
}

/// How a step ends after an attempt that did not ask for a retry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepEnd {
    /// Return the attempt's value.
    Completed,
    /// The step failed for good.
    Failed(StepFailure),
}

/// How an `elicit` that goes on ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElicitNext {
    /// Answered: return this response (JSON text).
    Answered(String),
    /// The deadline passed first (only an elicitation asked with a timeout ends so).
    TimedOut,
}

/// What a `check_input` does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckNext {
    /// Recorded: return what the check saw then (JSON text, `None` for no answer).
    Seen(Option<String>),
    /// New ground: read the offer fresh and record it with [`Activation::record_check`].
    Read,
}

/// One activation of a task body: the replay state and every decision made on it.
#[derive(Debug)]
pub struct Activation {
    journal: TaskState,
    settings: Settings,
    cancel_requested: bool,
    /// Whether the cancellation was recorded before this activation claimed the task.
    cancel_at_claim: bool,
    occurrences: HashMap<String, u32>,
    status_calls: u32,
    next_seq: u64,
    suspension: Option<Suspension>,
    attempts: Attempts,
    rerun: bool,
    closures: Vec<String>,
    outbox: Vec<Write>,
    /// The journal keys this run has reached (claimed, or asked for), recorded or not: a
    /// recorded key outside it is ground an earlier run broke further on (what
    /// [`patched`](Self::patched) decides with).
    reached: HashSet<String>,
    /// How many keys of the loaded journal (the body's own, not the context's `$` keys) this
    /// run has not reached yet.
    unreached: usize,
    /// The first new ground this run asked to break while recorded keys were unreached: it
    /// waits for [`judge_deferred_ground`](Self::judge_deferred_ground).
    deferred_ground: Option<String>,
    /// How many random draws this run made, in call order.
    draws: u64,
    /// After a cancel, when the compensations this run registered must be over: set while
    /// they run (see [`begin_cleanup`](Self::begin_cleanup)).
    cleanup_until: Option<Timestamp>,
}

impl Activation {
    /// An activation replaying `journal` (loaded in full after the claim) under `settings`.
    pub fn new(journal: TaskState, settings: Settings) -> Self {
        let unreached = body_rows(&journal).count();
        Activation {
            cancel_requested: journal.task.cancel_requested,
            cancel_at_claim: journal.task.cancel_requested,
            next_seq: journal.next_seq(),
            journal,
            settings,
            occurrences: HashMap::new(),
            status_calls: 0,
            suspension: None,
            attempts: Attempts::default(),
            rerun: false,
            closures: Vec::new(),
            outbox: Vec::new(),
            reached: HashSet::new(),
            unreached,
            deferred_ground: None,
            draws: 0,
            cleanup_until: None,
        }
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.journal.task.task_id
    }

    /// The limits on stored values.
    pub fn limits(&self) -> &Limits {
        &self.settings.limits
    }

    /// The guard of every write of this activation: its lease's generation.
    pub fn guard(&self) -> Guard {
        Guard {
            version: None,
            generation: Some(self.journal.task.generation),
        }
    }

    /// The journal as this activation has changed it.
    #[cfg(test)]
    pub fn journal(&self) -> &TaskState {
        &self.journal
    }

    // ---- names ----

    /// Claims the journal key of the next occurrence of `name`: `name`, then `name#2`, ...
    /// Keys are claimed when an operation is called, so they follow the order of the calls.
    pub fn claim(&mut self, name: &str) -> Decision<String> {
        self.refuse_nested(name)?;
        self.check_name(name)?;
        let count = self.occurrences.entry(name.to_owned()).or_insert(0);
        *count += 1;
        let key = occurrence_key(name, *count);
        // The code reaches the operation where it calls it, whether or not it awaits it.
        self.reach(&key);
        Ok(key)
    }

    /// The key the next call of `name` will claim, prefixed with the task id: a key for external
    /// deduplication, the same on every attempt and replay.
    pub fn idempotency_key(&self, name: &str) -> String {
        let taken = self.occurrences.get(name).copied().unwrap_or(0);
        format!("{}:{}", self.task_id(), occurrence_key(name, taken + 1))
    }

    // ---- steps ----

    /// Decides what the step under `key` does, retried under `retry` and with attempts limited
    /// to `timeout` (the task's own when `None`). A pending retry not due yet stops the body.
    pub fn step(
        &mut self,
        key: &str,
        retry: Option<RetryPolicy>,
        timeout: Option<Duration>,
        now: Timestamp,
    ) -> Decision<StepNext> {
        let policy = retry.unwrap_or(self.settings.retry);
        if let Err(error) = policy.validate() {
            let what = format!("step {key:?}");
            let reason = error.0.to_owned();
            return Err(self.fail(EngineError::InvalidPolicy { what, reason }));
        }
        let number = match self.recorded_step(key, StepKind::Do)? {
            None => 1,
            Some(row) => match row.status {
                StepStatus::Completed => {
                    let value = row.result.clone().unwrap_or_else(|| "null".to_owned());
                    return Ok(StepNext::Replay(value));
                }
                StepStatus::Failed => return Ok(StepNext::Failed(StepFailure::of_row(row))),
                StepStatus::Pending if row.next_attempt_at.is_some_and(|at| at > now) => {
                    return Err(self.suspend(Suspension::Wait));
                }
                StepStatus::Pending => row.attempt + 1,
            },
        };
        self.break_ground()?;
        if self.cleanup_until.is_some_and(|deadline| now >= deadline) {
            // The cleanup's time is up: the task is cancelled with the rest unrun.
            return Err(self.suspend(Suspension::Cancelled));
        }
        if self.settings.hand_off_at.is_some_and(|at| now >= at) {
            // Recorded steps stay; the next activation replays them and starts this one.
            return Err(self.suspend(Suspension::HandOff));
        }
        let id = self.attempts.issue(Issued {
            key: key.to_owned(),
            number,
            policy,
            started_at: now,
        });
        trace::attempt_started(&self.journal.task, key, number);
        let timeout = timeout.unwrap_or(self.settings.step_timeout);
        Ok(StepNext::Run(Attempt {
            id,
            number,
            timeout,
        }))
    }

    /// Records how the attempt `id` ended, and says what follows: the value or a final
    /// failure, or (a retry is due later) a stop. An attempt the machine is not waiting for
    /// fails the task: the runtime answered one it was never given, or answered it twice.
    pub fn attempt_done(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Timestamp,
    ) -> Decision<StepEnd> {
        let Some(attempt) = self.attempts.answer(id) else {
            return Err(self.not_running(id));
        };
        let seq = self.take_seq();
        let earlier = self.journal.steps.get(&attempt.key);
        let mut row = rows::attempt(&attempt.key, attempt.number, earlier, seq, now);
        let took = now.saturating_since(attempt.started_at);
        let task = &self.journal.task;
        let end = match result {
            AttemptResult::Value(json) => {
                row.result = Some(json);
                trace::step_completed(task, &attempt.key, attempt.number, took);
                Some(StepEnd::Completed)
            }
            AttemptResult::Error {
                message,
                retryable,
                timed_out,
            } => {
                row.last_error = Some(message.clone());
                if retryable && attempt.policy.allows_retry_after(attempt.number) {
                    let retry_at = self.retry_at(&attempt, now);
                    row.status = StepStatus::Pending;
                    row.completed_at = None;
                    row.next_attempt_at = Some(retry_at);
                    let task = &self.journal.task;
                    trace::retry_scheduled(
                        task,
                        &attempt.key,
                        attempt.number,
                        took,
                        &message,
                        retry_at,
                    );
                    None
                } else {
                    let failure = StepFailure {
                        kind: final_failure_kind(retryable, timed_out),
                        attempts: attempt.number,
                        message,
                    };
                    trace::step_failed(task, &attempt.key, took, &failure);
                    row.status = StepStatus::Failed;
                    row.result = Some(failure.to_json());
                    Some(StepEnd::Failed(failure))
                }
            }
        };
        if self.suspension.is_some() && end.is_some() {
            self.rerun = true;
        }
        self.push(Write::PutStep(row));
        end.ok_or_else(|| self.suspend(Suspension::Wait))
    }

    /// The attempt `id`, whose future was dropped before it finished (its branch lost a
    /// `select!`, or the activation ended): nothing is recorded, the next activation runs it
    /// again. An attempt the machine is not waiting for fails the task, as in
    /// [`attempt_done`](Self::attempt_done).
    pub fn attempt_abandoned(&mut self, id: AttemptId) {
        if self.attempts.answer(id).is_none() {
            self.not_running(id);
        }
    }

    /// The closure of the step under `key` is being polled (or called): any journal operation
    /// on this task until [`leave_closure`](Self::leave_closure) is a nested step.
    pub fn enter_closure(&mut self, key: &str) {
        self.closures.push(key.to_owned());
    }

    /// The poll of the innermost closure returned.
    pub fn leave_closure(&mut self) {
        self.closures.pop();
    }

    // ---- sleeps ----

    /// Decides what the sleep under `key` for `duration` (as the body gave it; a malformed one
    /// fails the task here) does: go on, or stop until it is due.
    pub fn sleep(
        &mut self,
        key: &str,
        duration: Result<Duration, DurationError>,
        now: Timestamp,
    ) -> Decision<()> {
        match duration {
            Ok(duration) => self.sleep_until(key, now.saturating_add(duration), now),
            Err(source) => {
                let what = format!("the duration of sleep {key:?}");
                Err(self.fail(EngineError::InvalidDuration { what, source }))
            }
        }
    }

    /// Decides what the sleep under `key`, ending at `wake_at` (at the latest
    /// [`Timestamp::MAX`]), does: go on, or stop until it is due. A sleep ends early when an
    /// offer's answer asked for the next sleep to be cut; the cut is spent on that one sleep.
    pub fn sleep_until(&mut self, key: &str, wake_at: Timestamp, now: Timestamp) -> Decision<()> {
        let wake_at = wake_at.min(Timestamp::MAX);
        // The number a new row would take; `push` moves past it if the row is written.
        let seq = self.next_seq;
        let (row, recorded) = match self.recorded_step(key, StepKind::Sleep)? {
            Some(row) if row.status != StepStatus::Pending => return Ok(()),
            Some(row) => (row.clone(), true),
            None => {
                self.observe_cancel()?;
                (rows::pending_sleep(key, wake_at, seq, now), false)
            }
        };
        let cut = self.journal.task.cut_next_sleep;
        let due = row.wake_at.is_none_or(|at| at <= now);
        if !due && !cut {
            if !recorded {
                self.write_all(vec![Write::PutStep(row)])?;
            }
            return Err(self.suspend(Suspension::Wait));
        }
        let mut done = row;
        done.status = StepStatus::Completed;
        done.completed_at = Some(now);
        let mut writes = vec![Write::PutStep(done)];
        if cut {
            // The answer that asked for a sleep to be cut is spent on this one.
            writes.push(Write::ClearSleepCut);
        }
        self.write_all(writes)
    }

    // ---- input ----

    /// Decides what the elicitation under `key` does: return the answer, or that it timed
    /// out, or stop until it is answered. On new ground the machine records `request` (an
    /// elicitation clients can show, within the value limit, or the task fails here), moves the
    /// task to `input_required`, and stops; it times out `timeout` from now, if given.
    ///
    /// An elicitation recorded as timed out and now asked without a timeout means the body
    /// changed between runs: the task fails with [`EngineError::ElicitTimeoutRemoved`].
    pub fn elicit(
        &mut self,
        key: &str,
        request: Serialised,
        timeout: Option<Duration>,
        now: Timestamp,
    ) -> Decision<ElicitNext> {
        match self.recorded_input(key, StepKind::Elicit)? {
            Some(row) if row.timed_out && timeout.is_none() => {
                let key = key.to_owned();
                Err(self.fail(EngineError::ElicitTimeoutRemoved { key }))
            }
            Some(row) if row.timed_out => Ok(ElicitNext::TimedOut),
            Some(row) if row.answered => {
                let response = row.response.clone().unwrap_or_else(|| "null".to_owned());
                Ok(ElicitNext::Answered(response))
            }
            Some(_) => Err(self.suspend(Suspension::Wait)),
            None => {
                self.break_ground()?;
                let request = self.input_request(key, request)?;
                let seq = self.take_seq();
                let row = InputRow {
                    timeout_at: timeout.map(|timeout| now.saturating_add(timeout)),
                    ..InputRow::unanswered(key, request, true, seq, now)
                };
                trace::input_requested(&self.journal.task, key, row.timeout_at);
                self.write_all(vec![Write::PutInput(row), Write::AwaitInput { at: now }])?;
                Err(self.suspend(Suspension::Wait))
            }
        }
    }

    /// Records a standing offer under `key` with `request` (checked as for
    /// [`elicit`](Self::elicit)), unless it was offered before: the first request stands.
    pub fn offer(&mut self, key: &str, request: Serialised, now: Timestamp) -> Decision<()> {
        self.refuse_nested(key)?;
        self.check_name(key)?;
        if self.recorded_input(key, StepKind::Offer)?.is_some() {
            return Ok(());
        }
        self.break_ground()?;
        let request = self.input_request(key, request)?;
        let seq = self.take_seq();
        let row = InputRow::unanswered(key, request, false, seq, now);
        self.write_all(vec![Write::PutInput(row)])
    }

    /// Decides what the check under `step_key` does.
    pub fn check(&mut self, step_key: &str) -> Decision<CheckNext> {
        match self.recorded_step(step_key, StepKind::Check)? {
            Some(row) => {
                let seen = row.result.clone().filter(|text| text != "null");
                Ok(CheckNext::Seen(seen))
            }
            None => {
                self.break_ground()?;
                Ok(CheckNext::Read)
            }
        }
    }

    /// Takes the answer of the offer under `key` (`offer`, read fresh from the store), if one
    /// is waiting, and records what the check under `step_key` saw. Returns the answer.
    pub fn record_check(
        &mut self,
        step_key: &str,
        key: &str,
        offer: Option<InputRow>,
        now: Timestamp,
    ) -> Decision<Option<String>> {
        // Reading the offer reaches it, even if this run did not offer it again.
        self.reach(key);
        let seq = self.take_seq();
        let no_offer = |reason| EngineError::NoOffer {
            key: key.to_owned(),
            reason,
        };
        let mut writes = Vec::with_capacity(2);
        let answer = match offer {
            None => return Err(self.fail(no_offer("no offer is registered under it"))),
            Some(row) if row.blocking => {
                let error = no_offer("it is an elicitation, which cx.elicit reads");
                return Err(self.fail(error));
            }
            Some(mut row) if row.answered && !row.consumed => {
                row.consumed = true;
                let answer = row.response.clone();
                writes.push(Write::PutInput(row));
                answer
            }
            Some(_) => None,
        };
        let seen = rows::check(step_key, answer.clone(), seq, now);
        writes.push(Write::PutStep(seen));
        self.write_all(writes)?;
        Ok(answer)
    }

    // ---- status ----

    /// Numbers a `status` call (in call order, like keys); publish it with
    /// [`publish`](Self::publish).
    pub fn status_call(&mut self) -> Decision<u32> {
        self.refuse_nested("status")?;
        self.status_calls += 1;
        Ok(self.status_calls)
    }

    /// Publishes the `ordinal`-th status call with `meta`, if given (a JSON object within its
    /// limit, or the task fails here, replaying or not), unless an earlier run of the body
    /// already published it.
    pub fn publish(
        &mut self,
        ordinal: u32,
        message: String,
        meta: Option<Serialised>,
        now: Timestamp,
    ) -> Decision<()> {
        let meta = match meta.map(|meta| values::status_meta(self.limits(), meta)) {
            None => None,
            Some(Ok(meta)) => Some(meta),
            Some(Err(error)) => return Err(self.fail(error)),
        };
        // Replays never publish an old message again.
        if ordinal <= self.journal.task.status_published {
            return Ok(());
        }
        let write = Write::PublishStatus {
            message,
            meta,
            published: ordinal,
            at: now,
        };
        self.write_all(vec![write])
    }

    // ---- values the context records ----

    /// The clock reading of the body's next `cx.now()`: what the first run recorded under the
    /// call's key (`$now`, `$now#2`, ...), or `clock` recorded now.
    pub fn now(&mut self, clock: Timestamp) -> Timestamp {
        let Ok(key) = self.claim_own(&OwnKey::Now.key()) else {
            return clock;
        };
        let fresh = clock.as_millis().to_string();
        let text = self.recorded_value(&key, fresh, clock);
        match text.parse() {
            Ok(millis) => Timestamp::from_millis(millis),
            Err(_) => {
                self.fail(corrupt_value(&key, &text));
                clock
            }
        }
    }

    /// The body's next random draw: the next number of a stream fixed by the task's seed,
    /// which the first draw of the task's life records (`fresh_seed` gives it; its error fails
    /// the task). Draws are numbered in call order, so a replay draws the same numbers.
    pub fn random(
        &mut self,
        fresh_seed: impl FnOnce() -> Result<u128, String>,
        now: Timestamp,
    ) -> u64 {
        if self.refuse_nested("random").is_err() {
            return 0;
        }
        let seed = match self.recorded_step(&OwnKey::Seed.key(), StepKind::Value) {
            Ok(Some(row)) => row.result.as_deref().and_then(draws::parse_seed),
            _ => None,
        };
        let seed = match seed {
            Some(seed) => seed,
            None => match fresh_seed() {
                Ok(seed) => {
                    let text = draws::format_seed(seed);
                    let text = self.recorded_value(&OwnKey::Seed.key(), text, now);
                    draws::parse_seed(&text).unwrap_or(seed)
                }
                Err(error) => {
                    let error = format!("the OS random source failed: {error}");
                    self.fail(EngineError::Store(error));
                    return 0;
                }
            },
        };
        self.draws += 1;
        draws::nth(seed, self.draws)
    }

    /// Which side of the patch gate `id` this task takes: what it took before, if it reached
    /// the gate before; `false` if an earlier run recorded ground this run has not reached
    /// yet (the task passed this point on code without the gate); `true` otherwise (the task
    /// reaches the gate on the code that has it). The answer is recorded, so replays agree.
    pub fn patched(&mut self, id: &str, now: Timestamp) -> bool {
        if self.refuse_nested(id).is_err() || self.check_name(id).is_err() {
            return false;
        }
        let key = OwnKey::Patch(id).key();
        let fresh = (!self.passed_on_older_code()).to_string();
        self.recorded_value(&key, fresh, now) == "true"
    }

    /// Checks that this task takes the new side of the patch gate `id`, whose old side is
    /// gone from the code; a task that took (or would take) the old side fails here with
    /// [`EngineError::RetiredPatch`], instead of diverging further on.
    pub fn retire_patch(&mut self, id: &str, now: Timestamp) -> Decision<()> {
        if self.patched(id, now) {
            return Ok(());
        }
        let id = id.to_owned();
        Err(self.fail(EngineError::RetiredPatch { id }))
    }

    /// Whether the journal holds a step or input an earlier run recorded and this run has not
    /// reached: the body on the code that recorded it went past the point this run is at.
    fn passed_on_older_code(&self) -> bool {
        self.unreached > 0
    }

    // ---- the journal must be reached ----

    /// Whether the operation under `key`, about to break new ground (no row is recorded under
    /// it), must wait for [`judge_deferred_ground`](Self::judge_deferred_ground) first: an
    /// earlier run recorded keys this run has not reached, so either another branch of the
    /// body still reaches them, or the code changed under the task and this new ground would
    /// run in their place. The cleanup's compensations and a body stopping for a cancel wait
    /// for nothing.
    pub fn defers_new_ground(&mut self, key: &str) -> bool {
        let defers = self.unreached > 0
            && self.journal.recorded_kind(key).is_none()
            && self.cleanup_until.is_none()
            && !self.cancel_requested
            && self
                .suspension
                .as_ref()
                .is_none_or(Suspension::lets_branches_go_on);
        if defers && self.deferred_ground.is_none() {
            self.deferred_ground = Some(key.to_owned());
        }
        defers
    }

    /// Whether new ground waits for a judgement.
    pub fn ground_deferred(&self) -> bool {
        self.deferred_ground.is_some()
    }

    /// Judges the deferred new ground once the body paused (`busy`: the context still awaits
    /// something of its own, such as a yield to the host): released (`true`) once every
    /// recorded key is reached; the task fails with [`EngineError::UnreachedJournal`] once no
    /// branch can go on (no step attempt runs, nothing is awaited) and some are still not
    /// reached. `false` while the body may still reach them.
    pub fn judge_deferred_ground(&mut self, busy: bool) -> bool {
        let Some(new_ground) = &self.deferred_ground else {
            return false;
        };
        if self.unreached == 0 {
            self.deferred_ground = None;
            return true;
        }
        if busy || self.attempts.any_running() {
            return false;
        }
        let instead = Divergence::NewGround(new_ground.clone());
        self.deferred_ground = None;
        self.diverged(instead);
        true
    }

    /// Fails the task if its body returned without reaching every key an earlier run recorded:
    /// the code changed under the task, and what it skipped would otherwise end unnoticed.
    /// `false` if every key was reached.
    pub fn fail_unreached_journal(&mut self) -> bool {
        if self.unreached == 0 {
            return false;
        }
        self.diverged(Divergence::Returned);
        true
    }

    /// Fails the task if its body stopped to wait while rows it did not reach still ask for a
    /// wake-up (a step's retry, a sleep's end): the code no longer reaches them before its
    /// wait, so each such wake-up would run the body to the same wait, at once and again.
    /// `false` if no unreached row asks for one (the body may still reach them after its
    /// wait, as a step moved behind a wait does).
    pub fn fail_stranded_journal(&mut self) -> bool {
        if self.unreached == 0 {
            return false;
        }
        let stranded = self.journal.steps.values().any(|row| {
            let wakes = match row.kind {
                StepKind::Do => row.next_attempt_at.is_some(),
                StepKind::Sleep => row.wake_at.is_some(),
                _ => false,
            };
            wakes
                && row.status == StepStatus::Pending
                && !is_own_key(&row.key)
                && !self.reached.contains(&row.key)
        });
        if stranded {
            self.diverged(Divergence::Waited);
        }
        stranded
    }

    /// Fails the task: the body did `instead` of reaching the keys it has not reached.
    fn diverged(&mut self, instead: Divergence) {
        let keys = self.unreached_keys();
        self.fail(EngineError::UnreachedJournal { keys, instead });
    }

    /// The keys of the loaded journal this run has not reached, in the order they were
    /// recorded.
    fn unreached_keys(&self) -> Vec<String> {
        let mut keys: Vec<(u64, &str)> = body_rows(&self.journal)
            .filter(|(key, _)| !self.reached.contains(*key))
            .map(|(key, seq)| (seq, key))
            .collect();
        keys.sort_unstable();
        keys.into_iter().map(|(_, key)| key.to_owned()).collect()
    }

    /// Marks `key` reached by this run.
    fn reach(&mut self, key: &str) {
        if self.reached.contains(key) {
            return;
        }
        // A key is reached before this run records anything under it, so a row under it now
        // is one the journal was loaded with.
        if !is_own_key(key) && self.journal.recorded_kind(key).is_some() {
            self.unreached -= 1;
        }
        self.reached.insert(key.to_owned());
    }

    /// The value recorded under the context's own `key`, or, on new ground, `fresh` recorded
    /// now. The row is only queued: it reaches the store ahead of the next write the body
    /// causes, so nothing outside the task can see a value the journal lacks, and a run that
    /// writes nothing after the draw loses nothing by forgetting it. A body that is stopping
    /// records nothing and gets `fresh`.
    fn recorded_value(&mut self, key: &str, fresh: String, now: Timestamp) -> String {
        match self.recorded_step(key, StepKind::Value) {
            Ok(Some(row)) => return row.result.clone().unwrap_or_default(),
            Ok(None) => {}
            Err(Stop) => return fresh,
        }
        let row = rows::value(key, fresh.clone(), self.next_seq, now);
        // Refused only when the body is stopping: nothing it does from here is written.
        let _ = self.write_all(vec![Write::PutStep(row)]);
        fresh
    }

    /// Claims the next key of one of the context's own names (`$now`): as
    /// [`claim`](Self::claim), without the check that keeps `$` out of the body's names.
    fn claim_own(&mut self, name: &str) -> Decision<String> {
        self.refuse_nested(name)?;
        let count = self.occurrences.entry(name.to_owned()).or_insert(0);
        *count += 1;
        Ok(occurrence_key(name, *count))
    }

    // ---- cleanup after a cancel ----

    /// Registers the compensation `name` and returns its key (`$cleanup:<name>`, then `#2`,
    /// ... in call order), recording the registration unless an earlier run did: the row tells
    /// a cancel that there is cleanup to run. Registering breaks no ground, so it is recorded
    /// even with a cancellation waiting: what it compensates for happened before it. Once the
    /// task's cleanup has begun, the set is closed: a registration no earlier run recorded
    /// (the replay got past where the cancel stopped it, say an answer came meanwhile) is
    /// `None`, and does not run.
    pub fn register_cleanup(&mut self, name: &str, now: Timestamp) -> Decision<Option<String>> {
        self.refuse_nested(name)?;
        self.check_name(name)?;
        let key = self.claim_own(&OwnKey::Cleanup(name).key())?;
        if self.recorded_step(&key, StepKind::Do)?.is_none() {
            if self.journal.cleanup_deadline().is_some() {
                return Ok(None);
            }
            let row = rows::registered(&key, self.next_seq, now);
            // Refused only when the body is stopping: if for a cancel, the compensation runs
            // from the context's list all the same (and its step row records it).
            let _ = self.write_all(vec![Write::PutStep(row)]);
        }
        Ok(Some(key))
    }

    /// Stops a body that returned although the task's cancellation was recorded before this
    /// activation claimed it, or an earlier activation had begun the task's cleanup: whatever
    /// let the replay get that far without breaking new ground (an answer, a child's outcome,
    /// a wake-up recorded after the cancel), a recorded cancel ends the task `cancelled`, so
    /// the cleanup runs instead. Only an activation that was already running when the cancel
    /// came may complete the task. `false` if neither holds.
    pub fn stop_for_recorded_cancel(&mut self) -> bool {
        if !self.cancel_at_claim && self.journal.cleanup_deadline().is_none() {
            return false;
        }
        self.suspend(Suspension::Cancelled);
        true
    }

    /// Turns an activation stopped by a cancellation to its cleanup: the compensations the
    /// run registered go next, as steps under their keys, and may wait for retries, until the
    /// cleanup's deadline (recorded when a cleanup first begins, `timeout` from then). `false`
    /// if the body was not stopped by a cancellation or the deadline has passed: nothing runs.
    pub fn begin_cleanup(&mut self, timeout: Duration, now: Timestamp) -> bool {
        if self.suspension != Some(Suspension::Cancelled) {
            return false;
        }
        let recorded = self.journal.cleanup_deadline();
        let deadline = recorded.unwrap_or_else(|| now.saturating_add(timeout));
        if deadline <= now {
            return false;
        }
        self.suspension = None;
        self.cleanup_until = Some(deadline);
        if recorded.is_none() {
            let row = rows::cleanup_deadline(
                &OwnKey::CleanupDeadline.key(),
                deadline,
                self.next_seq,
                now,
            );
            self.push(Write::PutStep(row));
        }
        true
    }

    // ---- the store and the end ----

    /// Fails the task with `error`.
    pub fn fail(&mut self, error: EngineError) -> Stop {
        self.suspend(Suspension::Fail(error))
    }

    /// Stops the body (or, in a concurrent body, one branch of it) for `why`. Of several
    /// reasons the weightiest stands (a failure over a wait, a lost lease over everything);
    /// of equal ones, the first.
    pub fn suspend(&mut self, why: Suspension) -> Stop {
        // With a cancellation waiting, nothing is waited for any more: the body stops for
        // the cancel (and its cleanup runs) instead.
        let why = match why {
            Suspension::Wait if self.cancel_requested && self.cleanup_until.is_none() => {
                Suspension::Cancelled
            }
            other => other,
        };
        if self
            .suspension
            .as_ref()
            .is_none_or(|current| why.weight() > current.weight())
        {
            self.suspension = Some(why);
        }
        Stop
    }

    /// The writes decided since the last call, for the store to apply atomically under
    /// [`guard`](Self::guard).
    pub fn take_writes(&mut self) -> Vec<Write> {
        std::mem::take(&mut self.outbox)
    }

    /// How the store took the last writes: `Ok` with what it applied, or its error message.
    pub fn committed(&mut self, result: Result<Applied, String>) -> Decision<()> {
        match result {
            Ok(Applied::Done { cancel_requested }) => {
                self.cancel_requested = cancel_requested;
                Ok(())
            }
            Ok(Applied::Stale) => Err(self.suspend(Suspension::Stale)),
            Err(message) => Err(self.store_failed(message)),
        }
    }

    /// The store failed (with this message) to apply writes or to read for the body: the
    /// body stops, and the claim's redelivery runs it again.
    pub fn store_failed(&mut self, message: String) -> Stop {
        self.suspend(Suspension::StoreUnavailable(message))
    }

    /// How the activation ended, once it has: a reason to stop is recorded and no step attempt
    /// that should be recorded is still running.
    pub fn end(&self) -> Option<End> {
        let suspension = self.suspension.as_ref()?;
        if suspension.drains() && self.attempts.any_running() {
            return None;
        }
        Some(End {
            suspension: suspension.clone(),
            rerun: self.rerun,
        })
    }

    // ---- internals ----

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// The step row under `key`, if one is recorded, and recorded as `kind`.
    fn recorded_step(&mut self, key: &str, kind: StepKind) -> Decision<Option<&StepRow>> {
        self.check_kind(key, kind)?;
        Ok(self.journal.steps.get(key))
    }

    /// The input row under `key`, if one is recorded, and recorded as `kind`.
    fn recorded_input(&mut self, key: &str, kind: StepKind) -> Decision<Option<&InputRow>> {
        self.check_kind(key, kind)?;
        Ok(self.journal.inputs.get(key))
    }

    /// A key names one kind of operation: one recorded as another is non-determinism. The
    /// key counts as reached by this run either way.
    fn check_kind(&mut self, key: &str, requested: StepKind) -> Decision<()> {
        self.reach(key);
        match self.journal.recorded_kind(key) {
            Some(recorded) if recorded != requested => {
                let key = key.to_owned();
                let error = EngineError::Nondeterminism {
                    key,
                    recorded,
                    requested,
                };
                Err(self.fail(error))
            }
            _ => Ok(()),
        }
    }

    /// New ground is where a waiting cancellation is observed; recorded ground replays whatever
    /// the flag says.
    fn observe_cancel(&mut self) -> Decision<()> {
        // The cleanup runs after the cancel was observed, on ground of its own.
        if self.cancel_requested && self.cleanup_until.is_none() {
            return Err(self.suspend(Suspension::Cancelled));
        }
        Ok(())
    }

    /// Whether the operation at hand may break new ground: not with a cancellation waiting,
    /// nor once the body is stopping for any reason but a wait.
    fn break_ground(&mut self) -> Decision<()> {
        self.observe_cancel()?;
        self.new_ground()
    }

    /// Whether new ground may be broken: while one branch of the body waits, the others go
    /// on until the body pauses; after a hand-off or any other reason nothing new is recorded
    /// (recorded ground that needs no write is still replayed, and attempts already running
    /// finish).
    fn new_ground(&mut self) -> Decision<()> {
        match &self.suspension {
            Some(why) if !why.lets_branches_go_on() => Err(Stop),
            _ => Ok(()),
        }
    }

    /// When the attempt, which failed and may be retried, runs again: after its policy's
    /// delay, spread by a jitter the same on every replay.
    fn retry_at(&self, attempt: &Issued, now: Timestamp) -> Timestamp {
        let spread = jitter_fraction(self.task_id(), &attempt.key, attempt.number);
        now.saturating_add(attempt.policy.delay_after(attempt.number, spread))
    }

    /// An answer to an attempt the machine is not waiting for: a bug in the runtime.
    fn not_running(&mut self, id: AttemptId) -> Stop {
        let attempt = id.number();
        self.fail(EngineError::UnknownAttempt { attempt })
    }

    /// An input request as stored, or the task fails here.
    fn input_request(&mut self, key: &str, request: Serialised) -> Decision<String> {
        values::input_request(self.limits(), key, request).map_err(|error| self.fail(error))
    }

    fn check_name(&mut self, name: &str) -> Decision<()> {
        validate_name(name).map_err(|error| self.fail(error))
    }

    fn refuse_nested(&mut self, inner: &str) -> Decision<()> {
        match self.closures.last() {
            Some(outer) => {
                let error = EngineError::NestedStep {
                    outer: outer.clone(),
                    inner: inner.to_owned(),
                };
                Err(self.fail(error))
            }
            None => Ok(()),
        }
    }

    /// Queues writes for the store and applies them to this activation's journal, unless the
    /// body is stopping.
    fn write_all(&mut self, writes: Vec<Write>) -> Decision<()> {
        self.new_ground()?;
        for write in writes {
            self.push(write);
        }
        Ok(())
    }

    fn push(&mut self, write: Write) {
        if let Write::PutStep(row) = &write {
            self.next_seq = self.next_seq.max(row.seq + 1);
        }
        self.journal.apply(&write);
        self.outbox.push(write);
    }
}

/// Why a step failed for good after an attempt that was `retryable` (or not) and `timed_out`
/// (or not).
fn final_failure_kind(retryable: bool, timed_out: bool) -> StepFailureKind {
    match (retryable, timed_out) {
        (false, _) => StepFailureKind::NonRetryable,
        (true, true) => StepFailureKind::TimedOut,
        (true, false) => StepFailureKind::AttemptsExhausted,
    }
}

/// The error for a recorded value that does not read back as what its key holds.
fn corrupt_value(key: &str, text: &str) -> EngineError {
    EngineError::NotSerialisable {
        what: format!("the value recorded under {key:?}"),
        reason: format!("{text:?} is not what the key holds"),
    }
}

/// The keys of the body's own rows (steps, sleeps, inputs, children; not the context's `$`
/// rows) in `journal`, with their sequence numbers.
fn body_rows(journal: &TaskState) -> impl Iterator<Item = (&str, u64)> {
    let steps = journal
        .steps
        .values()
        .map(|row| (row.key.as_str(), row.seq));
    let inputs = journal
        .inputs
        .values()
        .map(|row| (row.key.as_str(), row.seq));
    steps.chain(inputs).filter(|(key, _)| !is_own_key(key))
}

/// The journal key of occurrence `count` (from 1) of `name` in a run: `name`, `name#2`, ...
fn occurrence_key(name: &str, count: u32) -> String {
    if count == 1 {
        name.to_owned()
    } else {
        format!("{name}#{count}")
    }
}

fn validate_name(name: &str) -> Result<(), EngineError> {
    let invalid = |reason| EngineError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("it is empty"));
    }
    if name.contains('#') {
        return Err(invalid("it contains '#'"));
    }
    if is_own_key(name) {
        return Err(invalid("it starts with '$'"));
    }
    Ok(())
}
