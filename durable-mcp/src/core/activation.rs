//! One activation of a task body as a sans-io state machine.
//!
//! An [`Activation`] owns everything a replay decides with: the journal as this activation
//! has changed it, the occurrence count of every name, the next sequence number, the cancel
//! flag the store last reported, the count of `status` calls, the step attempts running and
//! the reason the run stops. Each call of the body's API (`step`, `sleep`, `elicit`, ...) is
//! one method that returns a decision *and* updates the machine: the writes it decides are
//! applied to its own journal at once and queued for the store ([`take_writes`]), so no later
//! decision reads a view that misses them. The runtime's `TaskContext` is a thin async shell:
//! it asks, sends the queued writes to the store, reports how that went ([`committed`]), and
//! returns to the body or parks it.
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

use std::collections::HashMap;

use super::error::EngineError;
use super::journal::{Applied, Guard, InputRow, TaskState, Write};
use super::replay::{
    self, AfterAttempt, AttemptResult, CheckReplay, Cursor, ElicitReplay, OfferReplay, SleepReplay,
    StepReplay,
};
use super::retry::RetryPolicy;
use super::step_failure::StepFailure;
use super::time::Timestamp;

/// Why an activation stops before its body returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Suspension {
    /// Waiting for time or input; the schedule holds the next wake.
    Wait,
    /// A cancellation was observed at a step boundary.
    Cancelled,
    /// A newer activation or a terminal status owns the task; this one must not write.
    Stale,
    /// The store failed; the redelivery anchor runs the body again later.
    StoreUnavailable(String),
    /// An engine failure: the task fails.
    Fail(EngineError),
    /// The activation ran past the host's hand-off time; another runs the body on at once.
    HandOff,
}

impl Suspension {
    /// Whether step attempts already running finish and are recorded before the activation
    /// ends. Only waits do: after a cancel, a failure or a lost lease their results could not
    /// change what happens to the task.
    fn drains(&self) -> bool {
        matches!(self, Suspension::Wait | Suspension::HandOff)
    }

    /// Whether other branches of the body may still break new ground: only while one branch
    /// waits. A hand-off starts nothing new, and the other reasons end the activation at once.
    fn lets_branches_go_on(&self) -> bool {
        matches!(self, Suspension::Wait)
    }

    /// Which of two reasons stands: the one that decides more about the task. A lost lease
    /// writes nothing at all; a failed store settles nothing; a failure or a cancellation ends
    /// the task whatever else waits; a hand-off runs the body again sooner than a wait.
    fn weight(&self) -> u8 {
        match self {
            Suspension::Wait => 0,
            Suspension::HandOff => 1,
            Suspension::Cancelled => 2,
            Suspension::Fail(_) => 3,
            Suspension::StoreUnavailable(_) => 4,
            Suspension::Stale => 5,
        }
    }
}

/// The decision that the body stops here: its future stays pending and is dropped when the
/// activation ends. The machine has recorded why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop;

/// A decision of the machine: go on with a `T`, or stop.
pub type Decision<T> = Result<T, Stop>;

/// How an activation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct End {
    /// Why the body stopped.
    pub suspension: Suspension,
    /// A step attempt that was still running when the body stopped finished and recorded a
    /// result meanwhile: the body should run again at once to see it, instead of waiting for
    /// the wake the suspension asked for.
    pub rerun: bool,
}

/// What a `step` does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepNext {
    /// Recorded: return this value (JSON text); the closure does not run.
    Replay(String),
    /// Recorded as failed: return this failure again.
    Failed(StepFailure),
    /// Run the closure as attempt number `attempt`, then report it with
    /// [`Activation::attempt_done`] (or [`Activation::attempt_abandoned`]).
    Run {
        /// The attempt's number, from 1.
        attempt: u32,
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

/// What an `elicit` does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElicitNext {
    /// Answered: return this response (JSON text).
    Answered(String),
    /// The deadline passed first.
    TimedOut,
    /// New ground: serialise the request and record it with [`Activation::ask`].
    Ask,
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
    cancel_requested: bool,
    occurrences: HashMap<String, u32>,
    status_calls: u32,
    next_seq: u64,
    hand_off_at: Option<Timestamp>,
    suspension: Option<Suspension>,
    running: u32,
    rerun: bool,
    closures: Vec<String>,
    outbox: Vec<Write>,
}

impl Activation {
    /// An activation replaying `journal` (loaded in full after the claim). `hand_off_at` is when
    /// no new step attempt may start any more (a host's wall-clock limit), if there is one.
    pub fn new(journal: TaskState, hand_off_at: Option<Timestamp>) -> Self {
        Activation {
            cancel_requested: journal.task.cancel_requested,
            next_seq: journal.next_seq(),
            journal,
            occurrences: HashMap::new(),
            status_calls: 0,
            hand_off_at,
            suspension: None,
            running: 0,
            rerun: false,
            closures: Vec::new(),
            outbox: Vec::new(),
        }
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.journal.task.task_id
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
        if let Err(error) = validate_name(name) {
            return Err(self.fail(error));
        }
        let count = self.occurrences.entry(name.to_owned()).or_insert(0);
        *count += 1;
        Ok(occurrence_key(name, *count))
    }

    /// The key the next call of `name` will claim, prefixed with the task id: a key for external
    /// deduplication, the same on every attempt and replay.
    pub fn idempotency_key(&self, name: &str) -> String {
        let taken = self.occurrences.get(name).copied().unwrap_or(0);
        format!("{}:{}", self.task_id(), occurrence_key(name, taken + 1))
    }

    // ---- steps ----

    /// Decides what the step under `key` does under `policy`.
    pub fn step(&mut self, key: &str, policy: &RetryPolicy, now: Timestamp) -> Decision<StepNext> {
        if let Err(error) = policy.validate() {
            let what = format!("step {key:?}");
            let reason = error.0.to_owned();
            return Err(self.fail(EngineError::InvalidPolicy { what, reason }));
        }
        let decided = replay::replay_step(&self.cursor(now), key);
        let attempt = match self.decided(decided)? {
            StepReplay::Value(json) => return Ok(StepNext::Replay(json)),
            StepReplay::Failed(failure) => return Ok(StepNext::Failed(failure)),
            StepReplay::Wait => return Err(self.suspend(Suspension::Wait)),
            StepReplay::Cancelled => return Err(self.suspend(Suspension::Cancelled)),
            StepReplay::Run { attempt } => attempt,
        };
        self.new_ground()?;
        if self.hand_off_at.is_some_and(|at| now >= at) {
            // Recorded steps stay; the next activation replays them and starts this one.
            return Err(self.suspend(Suspension::HandOff));
        }
        self.running += 1;
        Ok(StepNext::Run { attempt })
    }

    /// Records how attempt `attempt` of the step under `key` ended, and says what follows: the
    /// value or a final failure, or (a retry is due later) a stop.
    pub fn attempt_done(
        &mut self,
        key: &str,
        attempt: u32,
        result: AttemptResult,
        policy: &RetryPolicy,
        now: Timestamp,
    ) -> Decision<StepEnd> {
        self.running = self.running.saturating_sub(1);
        let seq = self.take_seq();
        let (row, after) =
            replay::record_attempt(&self.cursor(now), key, attempt, result, policy, seq);
        let finished = !matches!(after, AfterAttempt::RetryAt(_));
        if self.suspension.is_some() && finished {
            self.rerun = true;
        }
        self.push(Write::PutStep(row));
        match after {
            AfterAttempt::Completed => Ok(StepEnd::Completed),
            AfterAttempt::Failed(failure) => Ok(StepEnd::Failed(failure)),
            AfterAttempt::RetryAt(_) => Err(self.suspend(Suspension::Wait)),
        }
    }

    /// An attempt whose future was dropped before it finished (its branch lost a `select!`,
    /// or the activation ended): nothing is recorded, the next activation runs it again.
    pub fn attempt_abandoned(&mut self) {
        self.running = self.running.saturating_sub(1);
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

    /// Decides what the sleep under `key`, ending at `wake_at`, does: go on, or stop until it
    /// is due. A sleep ends early when an offer's answer asked for the next sleep to be cut;
    /// the cut is spent on that one sleep.
    pub fn sleep(&mut self, key: &str, wake_at: Timestamp, now: Timestamp) -> Decision<()> {
        // The number a new row would take; `push` moves past it if the row is written.
        let seq = self.next_seq;
        let decided = replay::replay_sleep(&self.cursor(now), key, wake_at, seq);
        match self.decided(decided)? {
            SleepReplay::Done(writes) => {
                self.write_all(writes)?;
                Ok(())
            }
            SleepReplay::Wait(writes) => {
                self.write_all(writes)?;
                Err(self.suspend(Suspension::Wait))
            }
            SleepReplay::Cancelled => Err(self.suspend(Suspension::Cancelled)),
        }
    }

    // ---- input ----

    /// Decides what the elicitation under `key` does.
    pub fn elicit(&mut self, key: &str, now: Timestamp) -> Decision<ElicitNext> {
        let decided = replay::replay_elicit(&self.cursor(now), key);
        match self.decided(decided)? {
            ElicitReplay::Answered(response) => Ok(ElicitNext::Answered(response)),
            ElicitReplay::TimedOut => Ok(ElicitNext::TimedOut),
            ElicitReplay::Wait => Err(self.suspend(Suspension::Wait)),
            ElicitReplay::Cancelled => Err(self.suspend(Suspension::Cancelled)),
            ElicitReplay::Ask => {
                self.new_ground()?;
                Ok(ElicitNext::Ask)
            }
        }
    }

    /// Records the elicitation under `key` with its serialised `request`, moves the task to
    /// `input_required`, and stops until it is answered (or times out at `timeout_at`).
    pub fn ask(
        &mut self,
        key: &str,
        request: String,
        timeout_at: Option<Timestamp>,
        now: Timestamp,
    ) -> Stop {
        let seq = self.take_seq();
        let writes = replay::elicit_writes(&self.cursor(now), key, request, timeout_at, seq);
        if self.write_all(writes).is_err() {
            return Stop;
        }
        self.suspend(Suspension::Wait)
    }

    /// Decides whether the offer under `key` is new ground (`true`: serialise the request and
    /// record it with [`record_offer`](Self::record_offer)) or offered before (`false`).
    pub fn offer(&mut self, key: &str, now: Timestamp) -> Decision<bool> {
        self.refuse_nested(key)?;
        if let Err(error) = validate_name(key) {
            return Err(self.fail(error));
        }
        let decided = replay::replay_offer(&self.cursor(now), key);
        match self.decided(decided)? {
            OfferReplay::Offered => Ok(false),
            OfferReplay::Cancelled => Err(self.suspend(Suspension::Cancelled)),
            OfferReplay::Offer => {
                self.new_ground()?;
                Ok(true)
            }
        }
    }

    /// Records a standing offer under `key` with its serialised `request`.
    pub fn record_offer(&mut self, key: &str, request: String, now: Timestamp) -> Decision<()> {
        let seq = self.take_seq();
        let write = replay::offer_write(&self.cursor(now), key, request, seq);
        self.write_all(vec![write])
    }

    /// Decides what the check under `step_key` does.
    pub fn check(&mut self, step_key: &str, now: Timestamp) -> Decision<CheckNext> {
        let decided = replay::replay_check(&self.cursor(now), step_key);
        match self.decided(decided)? {
            CheckReplay::Seen(answer) => Ok(CheckNext::Seen(answer)),
            CheckReplay::Cancelled => Err(self.suspend(Suspension::Cancelled)),
            CheckReplay::Read => {
                self.new_ground()?;
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
        let seq = self.take_seq();
        let decided = replay::check_writes(&self.cursor(now), step_key, key, offer, seq);
        let (answer, writes) = self.decided(decided)?;
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

    /// Publishes the `ordinal`-th status call, unless an earlier run of the body already did.
    pub fn publish(
        &mut self,
        ordinal: u32,
        message: String,
        meta: Option<String>,
        now: Timestamp,
    ) -> Decision<()> {
        if !replay::publishes_status(&self.cursor(now), ordinal) {
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

    // ---- the store and the end ----

    /// Fails the task with `error`.
    pub fn fail(&mut self, error: EngineError) -> Stop {
        self.suspend(Suspension::Fail(error))
    }

    /// Stops the body (or, in a concurrent body, one branch of it) for `why`. Of several
    /// reasons the weightiest stands (a failure over a wait, a lost lease over everything);
    /// of equal ones, the first.
    pub fn suspend(&mut self, why: Suspension) -> Stop {
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
            Err(message) => Err(self.suspend(Suspension::StoreUnavailable(message))),
        }
    }

    /// How the activation ended, once it has: a reason to stop is recorded and no step attempt
    /// that should be recorded is still running.
    pub fn end(&self) -> Option<End> {
        let suspension = self.suspension.as_ref()?;
        if suspension.drains() && self.running > 0 {
            return None;
        }
        Some(End {
            suspension: suspension.clone(),
            rerun: self.rerun,
        })
    }

    // ---- internals ----

    fn cursor(&self, now: Timestamp) -> Cursor<'_> {
        Cursor {
            journal: &self.journal,
            now,
            cancel_requested: self.cancel_requested,
        }
    }

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// A replay decision, or the engine failure it ran into.
    fn decided<T>(&mut self, decided: Result<T, EngineError>) -> Decision<T> {
        decided.map_err(|error| self.fail(error))
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
        if writes.is_empty() {
            return Ok(());
        }
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::core::control::test_task;
    use crate::core::journal::{StepKind, StepStatus};

    const NOW: Timestamp = Timestamp(50_000);

    fn activation() -> Activation {
        let journal = TaskState {
            task: test_task(Timestamp(0), None),
            steps: Default::default(),
            inputs: Default::default(),
        };
        Activation::new(journal, None)
    }

    fn ok(value: &str) -> AttemptResult {
        AttemptResult::Value(value.to_owned())
    }

    fn applied(m: &mut Activation) {
        m.take_writes();
        m.committed(Ok(Applied::Done {
            cancel_requested: false,
        }))
        .unwrap();
    }

    #[test]
    fn keys_follow_the_order_of_calls() {
        let mut m = activation();
        assert_eq!(m.idempotency_key("send"), "t:send");
        assert_eq!(m.claim("send"), Ok("send".to_owned()));
        assert_eq!(m.idempotency_key("send"), "t:send#2");
        assert_eq!(m.claim("send"), Ok("send#2".to_owned()));
        assert_eq!(m.claim("other"), Ok("other".to_owned()));
    }

    #[test]
    fn an_offer_answer_cuts_only_the_next_sleep() {
        let mut m = activation();
        m.journal.task.cut_next_sleep = true;
        let later = Timestamp(NOW.0 + 10_000);
        assert_eq!(m.sleep("first", later, NOW), Ok(()));
        let writes = m.take_writes();
        assert!(matches!(writes.last(), Some(Write::ClearSleepCut)));
        // The cut is spent: the second sleep of the same activation waits.
        assert_eq!(m.sleep("second", later, NOW), Err(Stop));
        assert_eq!(m.end().map(|end| end.suspension), Some(Suspension::Wait));
    }

    #[test]
    fn a_journal_call_inside_a_step_closure_fails_the_task() {
        let mut m = activation();
        let policy = RetryPolicy::DEFAULT;
        let key = m.claim("outer").unwrap();
        assert_eq!(m.step(&key, &policy, NOW), Ok(StepNext::Run { attempt: 1 }));
        m.enter_closure(&key);
        assert_eq!(m.claim("inner"), Err(Stop));
        m.leave_closure();
        m.attempt_abandoned();
        let end = m.end().expect("the task fails");
        assert!(matches!(
            end.suspension,
            Suspension::Fail(EngineError::NestedStep { ref outer, ref inner })
                if outer == "outer" && inner == "inner"
        ));
    }

    #[test]
    fn running_attempts_finish_after_a_sibling_suspends() {
        let mut m = activation();
        let policy = RetryPolicy::DEFAULT;
        let a = m.claim("a").unwrap();
        let b = m.claim("b").unwrap();
        assert!(matches!(m.step(&a, &policy, NOW), Ok(StepNext::Run { .. })));
        assert!(matches!(m.step(&b, &policy, NOW), Ok(StepNext::Run { .. })));
        // `a` fails and waits for its retry; `b` is still running.
        let failed = AttemptResult::Error {
            message: "boom".into(),
            retryable: true,
            timed_out: false,
        };
        assert_eq!(m.attempt_done(&a, 1, failed, &policy, NOW), Err(Stop));
        applied(&mut m);
        assert_eq!(m.end(), None, "b is still running");
        // Other branches go on while one waits.
        let c = m.claim("c").unwrap();
        assert!(matches!(m.step(&c, &policy, NOW), Ok(StepNext::Run { .. })));
        m.attempt_abandoned();
        // `b` finishes and is recorded; the body runs again at once to see it.
        assert_eq!(
            m.attempt_done(&b, 1, ok("2"), &policy, NOW),
            Ok(StepEnd::Completed)
        );
        let writes = m.take_writes();
        assert!(matches!(&writes[..], [Write::PutStep(row)] if row.key == "b"));
        let end = m.end().expect("nothing runs any more");
        assert_eq!(
            end,
            End {
                suspension: Suspension::Wait,
                rerun: true
            }
        );
    }

    #[test]
    fn the_weightiest_reason_to_stop_stands() {
        let mut m = activation();
        m.suspend(Suspension::Wait);
        m.fail(EngineError::StaleLease {
            task_id: "t".into(),
        });
        m.suspend(Suspension::Wait);
        assert!(matches!(
            m.end().map(|end| end.suspension),
            Some(Suspension::Fail(_))
        ));
        // A hand-off breaks no new ground.
        let mut m = activation();
        m.suspend(Suspension::HandOff);
        let key = m.claim("a").unwrap();
        assert_eq!(m.step(&key, &RetryPolicy::DEFAULT, NOW), Err(Stop));
    }

    #[test]
    fn a_cancel_ends_the_activation_without_waiting_for_attempts() {
        let mut m = activation();
        let policy = RetryPolicy::DEFAULT;
        let a = m.claim("a").unwrap();
        assert!(matches!(m.step(&a, &policy, NOW), Ok(StepNext::Run { .. })));
        m.cancel_requested = true;
        let b = m.claim("b").unwrap();
        assert_eq!(m.step(&b, &policy, NOW), Err(Stop));
        assert_eq!(
            m.end().map(|end| end.suspension),
            Some(Suspension::Cancelled)
        );
    }

    #[test]
    fn the_activation_sees_its_own_writes() {
        let mut m = activation();
        let policy = RetryPolicy::DEFAULT;
        let key = m.claim("a").unwrap();
        m.step(&key, &policy, NOW).unwrap();
        m.attempt_done(&key, 1, ok("7"), &policy, NOW).unwrap();
        let row = &m.journal().steps["a"];
        assert_eq!(
            (row.kind, row.status, row.result.as_deref()),
            (StepKind::Do, StepStatus::Completed, Some("7"))
        );
        // A recorded key asked for as another kind is non-determinism, also within one run.
        assert_eq!(m.sleep("a", NOW, NOW), Err(Stop));
        assert!(matches!(
            m.end().map(|end| end.suspension),
            Some(Suspension::Fail(EngineError::Nondeterminism { .. }))
        ));
    }

    #[test]
    fn status_calls_are_numbered_at_the_call_and_published_once() {
        let mut m = activation();
        m.journal.task.status_published = 1;
        let first = m.status_call().unwrap();
        let second = m.status_call().unwrap();
        assert_eq!((first, second), (1, 2));
        m.publish(first, "old".into(), None, NOW).unwrap();
        assert!(m.take_writes().is_empty(), "published by an earlier run");
        m.publish(second, "new".into(), None, NOW).unwrap();
        assert_eq!(m.take_writes().len(), 1);
    }

    #[test]
    fn a_lost_lease_stops_the_body() {
        let mut m = activation();
        assert_eq!(m.committed(Ok(Applied::Stale)), Err(Stop));
        assert_eq!(m.end().map(|end| end.suspension), Some(Suspension::Stale));
        let mut m = activation();
        m.hand_off_at = Some(NOW);
        let key = m.claim("a").unwrap();
        let policy = RetryPolicy {
            delay: Duration::from_secs(1),
            ..RetryPolicy::DEFAULT
        };
        assert_eq!(m.step(&key, &policy, NOW), Err(Stop));
        assert_eq!(m.end().map(|end| end.suspension), Some(Suspension::HandOff));
    }
}
