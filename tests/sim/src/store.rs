//! A fault-injecting [`Store`] around a real one.
//!
//! Faults are armed by the driver and fire at a later write (`create`, `apply`, `purge`):
//! - a write that fails: nothing is written, an error is returned, the store lives on;
//! - a crash before or after the write: the store goes dead (every later call fails) until
//!   the sim restarts the host;
//! - a torn batch, modelling the Durable Object store, which buffers a turn's step rows and
//!   inserts them at the end of the turn: at a write of step rows only, the write is
//!   acknowledged, then the host dies and the most recent `k` acknowledged step-only writes
//!   since the task's last other write are lost. A write a task's tick makes to another task's
//!   rows (creating or cancelling a child, telling a parent) is a request the output gate
//!   holds until the turn's writes commit: the sending task's rows before it are not lost.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use durable_mcp::store::{
    Applied, Guard, InputRow, ListPosition, LoadScope, StepRow, TaskRecord, TaskState, Write,
};
use durable_mcp::store::{Store, StoreError};

use crate::shared::Shared;

/// A fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The write fails and writes nothing.
    Fail,
    /// The host dies before the write.
    CrashBefore,
    /// The host dies right after the write, before answering.
    CrashAfter,
    /// At a step-only write: acknowledged, then the host dies and the last `k` step-only
    /// writes of the task are lost.
    Torn(u32),
}

/// One step-only write, with what its rows replaced.
#[derive(Clone, Debug)]
struct Undo {
    /// Each written key's previous row (`None`: it did not exist).
    previous: Vec<(String, Option<StepRow>)>,
}

/// The wrapper.
#[allow(missing_debug_implementations)] // holds store trait objects
pub struct FaultyStore {
    inner: Rc<dyn Store>,
    shared: Rc<Shared>,
    armed: Cell<Option<(u32, FaultKind)>>,
    dead: Cell<bool>,
    /// Step-only writes since each task's last other write.
    batches: RefCell<BTreeMap<String, Vec<Undo>>>,
    /// The task whose tick the host runs now.
    running: RefCell<Option<String>>,
    writes: Cell<u64>,
    faults: Cell<u64>,
    /// Faults fired by kind: fail, crash before, crash after, torn.
    by_kind: Cell<[u64; 4]>,
    /// How many step rows torn batches lost.
    torn_rows: Cell<u64>,
    /// Step rows lost to torn batches: (task, key).
    torn: RefCell<Vec<(String, String)>>,
}

impl FaultyStore {
    /// A wrapper around `inner`.
    pub fn new(inner: Rc<dyn Store>, shared: Rc<Shared>) -> Self {
        FaultyStore {
            inner,
            shared,
            armed: Cell::new(None),
            dead: Cell::new(false),
            batches: RefCell::default(),
            running: RefCell::default(),
            writes: Cell::new(0),
            faults: Cell::new(0),
            by_kind: Cell::new([0; 4]),
            torn_rows: Cell::new(0),
            torn: RefCell::default(),
        }
    }

    /// Arms `kind` to fire at the `after`-th write from now (1 = the next one).
    pub fn arm(&self, after: u32, kind: FaultKind) {
        self.armed.set(Some((after.max(1), kind)));
    }

    /// The host runs the tick of `task` now (`None`: it serves a client).
    pub fn running(&self, task: Option<&str>) {
        *self.running.borrow_mut() = task.map(str::to_owned);
    }

    /// A write to `task_id`'s rows: if the running tick is another task's, that task's host sent
    /// it once its own rows committed.
    fn committed_before(&self, task_id: &str) {
        let running = self.running.borrow();
        if let Some(sender) = running.as_deref().filter(|sender| *sender != task_id) {
            self.batches.borrow_mut().remove(sender);
        }
    }

    /// Disarms any armed fault.
    pub fn disarm(&self) {
        self.armed.set(None);
    }

    /// Whether the host died.
    pub fn is_dead(&self) -> bool {
        self.dead.get()
    }

    /// The host started again over the same rows.
    pub fn revive(&self) {
        self.dead.set(false);
        self.armed.set(None);
        self.batches.borrow_mut().clear();
    }

    /// How many writes were attempted.
    pub fn writes(&self) -> u64 {
        self.writes.get()
    }

    /// How many faults fired.
    pub fn faults(&self) -> u64 {
        self.faults.get()
    }

    /// Faults fired by kind: failed writes, crashes before, crashes after, torn batches.
    pub fn faults_by_kind(&self) -> [u64; 4] {
        self.by_kind.get()
    }

    /// How many step rows torn batches lost.
    pub fn torn_rows(&self) -> u64 {
        self.torn_rows.get()
    }

    /// Takes the step rows lost to torn batches since the last call.
    pub fn take_torn(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.torn.borrow_mut())
    }

    fn down() -> StoreError {
        StoreError("sim: the host is down".to_owned())
    }

    /// Decides whether the write about to happen faults. `step_only` says whether it writes
    /// step rows only (a torn batch waits for such a write).
    fn fault_now(&self, task_id: &str, step_only: bool) -> Option<FaultKind> {
        let (left, kind) = self.armed.get()?;
        if left > 1 {
            self.armed.set(Some((left - 1, kind)));
            return None;
        }
        if matches!(kind, FaultKind::Torn(_)) && !step_only {
            return None;
        }
        self.armed.set(None);
        self.faults.set(self.faults.get() + 1);
        let mut by_kind = self.by_kind.get();
        by_kind[match kind {
            FaultKind::Fail => 0,
            FaultKind::CrashBefore => 1,
            FaultKind::CrashAfter => 2,
            FaultKind::Torn(_) => 3,
        }] += 1;
        self.by_kind.set(by_kind);
        match kind {
            FaultKind::Fail => self.shared.disrupt_task(task_id),
            _ => self.shared.disrupt(),
        }
        Some(kind)
    }

    fn die(&self) -> StoreError {
        self.dead.set(true);
        StoreError("sim: the host crashed".to_owned())
    }

    /// Creates `task` in the inner store, telling the world whether it was inserted.
    fn insert(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError> {
        let existed = self
            .inner
            .load(&task.task_id, LoadScope::Control)?
            .is_some();
        let stored = self.inner.create(task)?;
        if !existed {
            self.shared.task_inserted(&task.task_id);
        }
        Ok(stored)
    }

    /// Loses the last `k` step-only writes of `task`: rebuilds its rows without them.
    fn tear(&self, task_id: &str, k: u32) {
        let undone: Vec<Undo> = {
            let mut batches = self.batches.borrow_mut();
            let list = batches.entry(task_id.to_owned()).or_default();
            let keep = list.len().saturating_sub(k as usize);
            list.split_off(keep)
        };
        if crate::tracing() {
            eprintln!(
                "sim:   torn batch of {task_id}: losing {} of the writes",
                undone.len()
            );
        }
        if undone.is_empty() {
            return;
        }
        let Ok(Some(mut state)) = self.inner.load(task_id, LoadScope::Full) else {
            return;
        };
        for undo in undone.iter().rev() {
            for (key, previous) in &undo.previous {
                match previous {
                    Some(row) => state.steps.insert(key.clone(), row.clone()),
                    None => state.steps.remove(key),
                };
                self.torn
                    .borrow_mut()
                    .push((task_id.to_owned(), key.clone()));
                self.torn_rows.set(self.torn_rows.get() + 1);
            }
        }
        rebuild(&*self.inner, &state);
    }
}

/// Writes `state` as the task's only rows.
fn rebuild(store: &dyn Store, state: &TaskState) {
    let id = &state.task.task_id;
    let rebuilt = store
        .purge(id)
        .and_then(|()| store.create(&state.task))
        .and_then(|_| {
            let writes: Vec<Write> = state
                .steps
                .values()
                .cloned()
                .map(Write::PutStep)
                .chain(state.inputs.values().cloned().map(Write::PutInput))
                .collect();
            store.apply(id, Guard::default(), &writes)
        });
    if let Err(error) = rebuilt {
        panic!("sim: rebuilding task {id} after a torn batch failed: {error}");
    }
}

impl Store for FaultyStore {
    fn create(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError> {
        if self.dead.get() {
            return Err(Self::down());
        }
        self.committed_before(&task.task_id);
        self.writes.set(self.writes.get() + 1);
        match self.fault_now(&task.task_id, false) {
            None => self.insert(task),
            Some(FaultKind::Fail) => Err(StoreError("sim: the write failed".to_owned())),
            Some(FaultKind::CrashBefore | FaultKind::Torn(_)) => Err(self.die()),
            Some(FaultKind::CrashAfter) => {
                let _ = self.insert(task);
                Err(self.die())
            }
        }
    }

    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, StoreError> {
        if crate::tracing() {
            eprintln!("sim:   load {task_id} {scope:?}");
        }
        if self.dead.get() {
            return Err(Self::down());
        }
        self.inner.load(task_id, scope)
    }

    fn load_input(&self, task_id: &str, key: &str) -> Result<Option<InputRow>, StoreError> {
        if self.dead.get() {
            return Err(Self::down());
        }
        self.inner.load_input(task_id, key)
    }

    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, StoreError> {
        if self.dead.get() {
            return Err(Self::down());
        }
        self.committed_before(task_id);
        self.writes.set(self.writes.get() + 1);
        if crate::tracing() {
            eprintln!("sim:   apply {task_id} {guard:?} {writes:?}");
        }
        let step_only = !writes.is_empty() && writes.iter().all(|w| matches!(w, Write::PutStep(_)));
        let fault = self.fault_now(task_id, step_only);
        match fault {
            Some(FaultKind::Fail) => return Err(StoreError("sim: the write failed".to_owned())),
            Some(FaultKind::CrashBefore) => return Err(self.die()),
            _ => {}
        }
        let previous = if step_only {
            let state = self.inner.load(task_id, LoadScope::Full)?;
            let previous = writes
                .iter()
                .filter_map(|w| match w {
                    Write::PutStep(row) => Some(row.key.clone()),
                    _ => None,
                })
                .map(|key| {
                    let row = state.as_ref().and_then(|s| s.steps.get(&key).cloned());
                    (key, row)
                })
                .collect();
            Some(previous)
        } else {
            None
        };
        let applied = self.inner.apply(task_id, guard, writes)?;
        if let Applied::Done { cancel_requested } = applied {
            let mut batches = self.batches.borrow_mut();
            match previous {
                Some(previous) => batches
                    .entry(task_id.to_owned())
                    .or_default()
                    .push(Undo { previous }),
                None => {
                    batches.remove(task_id);
                }
            }
            drop(batches);
            // Whoever asks (a client, or a parent's cleanup for its child), the cancellation
            // counts from the write that records it.
            for write in writes {
                if let Write::PutTask(record) = write
                    && record.cancel_requested
                {
                    self.shared.cancel_recorded(task_id, record.generation);
                }
            }
            // An activation's write (guarded by its lease alone) tells it about a cancellation.
            if cancel_requested && guard.generation.is_some() && guard.version.is_none() {
                self.shared.cancel_seen(task_id);
            }
        }
        match fault {
            Some(FaultKind::CrashAfter) => Err(self.die()),
            Some(FaultKind::Torn(k)) => {
                self.tear(task_id, k);
                // Acknowledged: the loss shows only once the host is gone.
                self.dead.set(true);
                Ok(applied)
            }
            _ => Ok(applied),
        }
    }

    fn purge(&self, task_id: &str) -> Result<(), StoreError> {
        if self.dead.get() {
            return Err(Self::down());
        }
        self.writes.set(self.writes.get() + 1);
        match self.fault_now(task_id, false) {
            None => self.inner.purge(task_id),
            Some(FaultKind::Fail) => Err(StoreError("sim: the write failed".to_owned())),
            Some(FaultKind::CrashBefore | FaultKind::Torn(_)) => Err(self.die()),
            Some(FaultKind::CrashAfter) => {
                let _ = self.inner.purge(task_id);
                Err(self.die())
            }
        }
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        if self.dead.get() {
            return Err(Self::down());
        }
        self.inner.task_ids()
    }
    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        if self.dead.get() {
            return Err(Self::down());
        }
        self.inner.list_tasks(scope, after, limit)
    }
}
