//! A harness that drives tasks on virtual time, without any server.

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::clock::{RecordingScheduler, VirtualClock, VirtualTimer};
use super::memory::MemoryStore;
use crate::core::control::TaskSnapshot;
use crate::core::{EngineError, TaskState, TaskStatus, Timestamp};
use crate::runtime::{CreateTask, Engine, Host, IntoDelay, LocalBoxFuture, Store, TaskRegistry};

/// How long [`Harness::run_until_idle`] waits for a step that awaits something outside
/// virtual time (real I/O) before it calls the task stalled.
const REAL_WAIT_LIMIT: Duration = Duration::from_secs(30);

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

/// Drives tasks through the real [`Engine`] on a [`VirtualClock`]: create a task, run it until
/// nothing more happens by itself, move time on, answer input, cancel, crash and recover, and
/// look at the journal. A task body is unit-tested in milliseconds this way.
///
/// Ticks fire exactly when the engine scheduled them; virtual time moves only in
/// [`advance`](Harness::advance). An engine error from a tick (a failing store) panics, so a
/// test never passes over one.
#[allow(missing_debug_implementations)] // holds running futures
pub struct Harness {
    clock: Rc<VirtualClock>,
    store: Rc<dyn Store>,
    scheduler: Rc<RecordingScheduler>,
    registry: TaskRegistry,
    engine: Rc<Engine>,
    running: Vec<Activation>,
}

impl Harness {
    /// A harness running the tasks of `tasks` on an in-memory store: an
    /// [`McpServer`](crate::McpServer) (`Harness::new(&server)`), or a hand-written
    /// [`TaskRegistry`].
    pub fn new(tasks: impl Into<TaskRegistry>) -> Self {
        Self::with_store(tasks, Rc::new(MemoryStore::new()))
    }

    /// A harness running the tasks of `tasks` on `store`.
    pub fn with_store(tasks: impl Into<TaskRegistry>, store: Rc<dyn Store>) -> Self {
        let registry = tasks.into();
        let clock = VirtualClock::new();
        let scheduler = Rc::new(RecordingScheduler::default());
        let engine = Self::build_engine(&registry, &store, &clock, &scheduler);
        Harness {
            clock,
            store,
            scheduler,
            registry,
            engine,
            running: Vec::new(),
        }
    }

    fn build_engine(
        registry: &TaskRegistry,
        store: &Rc<dyn Store>,
        clock: &Rc<VirtualClock>,
        scheduler: &Rc<RecordingScheduler>,
    ) -> Rc<Engine> {
        let host = Host {
            store: store.clone(),
            clock: clock.clone(),
            timer: Rc::new(VirtualTimer(clock.clone())),
            scheduler: scheduler.clone(),
        };
        let engine = Rc::new(Engine::new(registry.clone(), host));
        // Child tasks live in the same store.
        engine.reach_own_tasks();
        engine
    }

    /// The engine under test.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine under test, shared (to put a [`Router`](crate::http::Router) over it). After
    /// [`crash_and_restart`](Self::crash_and_restart) it is a new engine.
    pub fn shared_engine(&self) -> Rc<Engine> {
        Rc::clone(&self.engine)
    }

    /// The virtual clock.
    pub fn clock(&self) -> &Rc<VirtualClock> {
        &self.clock
    }

    /// The current virtual time.
    pub fn now(&self) -> Timestamp {
        crate::runtime::Clock::now(&*self.clock)
    }

    /// Creates a task and returns its id.
    ///
    /// # Panics
    ///
    /// If the engine refuses the task (use [`engine`](Self::engine) to test refusals).
    pub fn create(&mut self, tool_name: &str, input: Value) -> String {
        self.create_task(CreateTask::new(tool_name, input))
    }

    /// Creates a task as `request` says and returns its id.
    ///
    /// # Panics
    ///
    /// If the engine refuses the task.
    pub fn create_task(&mut self, request: CreateTask) -> String {
        match self.engine.create_task(request) {
            Ok(snapshot) => snapshot.task_id,
            Err(error) => panic!("creating the task failed: {error}"),
        }
    }

    /// Runs every due tick and every running activation until nothing more happens without
    /// time moving on.
    pub fn run_until_idle(&mut self) {
        // Real time only bounds how long a step may await real I/O; the engine sees virtual time.
        #[allow(clippy::disallowed_methods)]
        let started = Instant::now();
        loop {
            let progressed = self.poll_running() | self.start_due();
            if progressed {
                continue;
            }
            let waiting_outside = !self.running.is_empty() && !self.clock.has_timers();
            if !waiting_outside {
                return;
            }
            // A step awaits something outside virtual time: give it real time.
            assert!(
                started.elapsed() < REAL_WAIT_LIMIT,
                "a running task has waited over {REAL_WAIT_LIMIT:?} for something outside \
                 virtual time; in the harness, step closures should not block on real I/O"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Moves virtual time on by `duration` (any [`IntoDelay`]: `duration!("5m")`, a
    /// [`Duration`], or a string such as `"5m"`), firing every wake-up and timer on the way at
    /// its exact time.
    ///
    /// # Panics
    ///
    /// If `duration` is a malformed string.
    pub fn advance(&mut self, duration: impl IntoDelay) {
        let duration = duration
            .into_delay()
            .unwrap_or_else(|error| panic!("{error}"));
        let target = self.now().saturating_add(duration);
        self.advance_to(target);
    }

    /// Moves virtual time on to `target`, firing everything due on the way.
    pub fn advance_to(&mut self, target: Timestamp) {
        loop {
            self.run_until_idle();
            match self.next_event() {
                Some(at) if at <= target => self.clock.set(at.max(self.now())),
                _ => break,
            }
        }
        self.clock.set(target);
        self.run_until_idle();
    }

    /// Moves time on from event to event until the task is terminal, waits for input, or
    /// nothing more is scheduled; at most `limit` ahead. Returns the task's status then.
    pub fn run_until_settled(&mut self, task_id: &str, limit: impl IntoDelay) -> TaskStatus {
        let limit = limit.into_delay().unwrap_or_else(|error| panic!("{error}"));
        let target = self.now().saturating_add(limit);
        loop {
            self.run_until_idle();
            let status = self.status(task_id);
            if status != TaskStatus::Working {
                return status;
            }
            match self.next_event() {
                Some(at) if at <= target => self.clock.set(at.max(self.now())),
                _ => return status,
            }
        }
    }

    /// The earliest scheduled wake-up or pending timer.
    pub fn next_event(&self) -> Option<Timestamp> {
        let wakes = self.scheduler.wakes().into_values().min();
        [wakes, self.clock.next_timer()].into_iter().flatten().min()
    }

    /// The task's scheduled wake-up.
    pub fn next_wake(&self, task_id: &str) -> Option<Timestamp> {
        self.scheduler.wake_of(task_id)
    }

    /// The task's snapshot.
    ///
    /// # Panics
    ///
    /// If there is no such task.
    pub fn get(&self, task_id: &str) -> TaskSnapshot {
        self.engine
            .get(task_id, None)
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// The task's status.
    pub fn status(&self, task_id: &str) -> TaskStatus {
        self.get(task_id).status
    }

    /// The task's result, once completed.
    pub fn result(&self, task_id: &str) -> Option<Value> {
        self.get(task_id).result
    }

    /// Answers input requests (`{key: response}`), as `tasks/update` does, then runs what that
    /// wakes.
    ///
    /// # Panics
    ///
    /// If the engine refuses the payload.
    pub fn update(&mut self, task_id: &str, responses: Value) {
        if let Err(error) = self.engine.update(task_id, &responses, None) {
            panic!("update refused: {error}");
        }
        self.run_until_idle();
    }

    /// Cancels the task, as `tasks/cancel` does, then runs what that wakes.
    pub fn cancel(&mut self, task_id: &str) {
        if let Err(error) = self.engine.cancel(task_id, None) {
            panic!("cancel refused: {error}");
        }
        self.run_until_idle();
    }

    /// The task with its whole journal.
    ///
    /// # Panics
    ///
    /// If there is no such task.
    pub fn journal(&self, task_id: &str) -> TaskState {
        match self.engine.journal(task_id) {
            Ok(Some(state)) => state,
            Ok(None) => panic!("no task {task_id:?}"),
            Err(error) => panic!("{error}"),
        }
    }

    /// Whether an activation of the task is running (stopped inside a step).
    pub fn is_running(&self, task_id: &str) -> bool {
        self.running.iter().any(|a| a.task_id == task_id)
    }

    /// Simulates the host dying and starting again: running activations are dropped mid-way,
    /// wake-ups are forgotten, and a fresh engine on the same store ticks every task at once,
    /// as a restarted host does: its first tick of each task runs again at once an activation
    /// that died with the old engine (see [`Engine`]'s recovery). The ticks run at the next
    /// [`run_until_idle`](Self::run_until_idle) or [`advance`](Self::advance).
    pub fn crash_and_restart(&mut self) {
        self.running.clear();
        self.scheduler.clear();
        self.engine = Self::build_engine(&self.registry, &self.store, &self.clock, &self.scheduler);
        if let Err(error) = self.engine.recover() {
            panic!("recovery failed: {error}");
        }
    }

    /// Deploys new code: as [`crash_and_restart`](Self::crash_and_restart), but the fresh
    /// engine runs `registry`, in which a task may have a changed body under the same name.
    /// Tasks in flight go on under the new code from their next activation, as they do after
    /// a deploy to Workers or a restart of the native host on a new binary: the way to test a
    /// [patch gate](crate::TaskContext::patched).
    pub fn deploy(&mut self, registry: TaskRegistry) {
        self.registry = registry;
        self.crash_and_restart();
    }

    fn poll_running(&mut self) -> bool {
        let mut progressed = false;
        let mut index = 0;
        while index < self.running.len() {
            let activation = &mut self.running[index];
            if !activation.woken.0.swap(false, Ordering::SeqCst) {
                index += 1;
                continue;
            }
            progressed = true;
            let waker = Waker::from(activation.woken.clone());
            match activation
                .future
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
            {
                Poll::Ready(result) => {
                    let activation = self.running.swap_remove(index);
                    if let Err(error) = result {
                        panic!("the tick of task {:?} failed: {error}", activation.task_id);
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
        for task_id in self.scheduler.wakes().into_keys() {
            if self.is_running(&task_id) || !self.scheduler.take_due(&task_id, now) {
                continue;
            }
            let engine = self.engine.clone();
            let id = task_id.clone();
            let future = Box::pin(async move { engine.tick(&id).await });
            let woken = Arc::new(Flag(AtomicBool::new(true)));
            self.running.push(Activation {
                task_id,
                woken,
                future,
            });
            started = true;
        }
        started
    }
}
