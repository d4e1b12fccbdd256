//! Step rows written together at the end of the JavaScript turn.
//!
//! A Durable Object commits the writes of a turn together once the turn's code and microtasks
//! have run, and holds every response until that commit. So a step row written when its step
//! completes and one written later in the same turn are equally durable and seen by the same
//! readers. A body that runs steps back to back writes one row per step, and a statement per
//! row binds twelve values through JavaScript each time, which costs more than the insert. So
//! the rows of a turn are kept here and inserted by one statement, from one JSON array
//! ([`PUT_STEPS_JSON`](crate::core::schema::PUT_STEPS_JSON)), in a microtask queued with the
//! first of them.
//!
//! The output gate holds an outgoing request only once a write of the turn has been *issued*
//! (the turn's implicit transaction starts at its first write, and the gate stays shut until
//! that transaction, with every later write of the turn, commits), and a row kept here is not
//! issued yet. So the engine flushes the store
//! ([`Store::flush`](crate::runtime::Store::flush)) before every step closure runs, and the
//! flush ([`StepBatch::before_closure`]) writes the waiting rows unless it already wrote some
//! since the JavaScript microtask queue last ran: then the gate is already shut until a commit
//! that will hold the rows kept since. A request a closure sends thus waits until the rows of
//! the steps before it are durable, and a run of steps that never awaits still writes once per
//! turn. Forgetting the earlier write at the next microtask, which comes no later than the end
//! of the turn, can only cost an extra write, never skip a needed one.
//!
//! The store writes the batch before any other statement, so nothing reads or writes around
//! it. A failure of the end-of-turn write is logged and answered by the store's next call,
//! which stops the activation: the lost steps run again, as after a crash.

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::rc::{Rc, Weak};

use wasm_bindgen::JsValue;
use wasm_bindgen::closure::Closure;
use worker::js_sys::Promise;

use super::sql::Sql;
use crate::core::StepRow;
use crate::core::schema::{self, SqlValue};
use crate::runtime::StoreError;

/// The most bytes of rows kept before they are written at once. Far below the 2 MB a
/// Durable Object admits in one bound value.
const MAX_BYTES: usize = 256 * 1024;

/// Step rows waiting for the end of the turn.
pub(crate) struct StepBatch {
    pending: Rc<Pending>,
    /// Writes the batch; queued as a microtask once per batch.
    end_of_turn: Closure<dyn FnMut(JsValue)>,
    /// Whether [`before_closure`](Self::before_closure) wrote since the microtask queue last ran.
    gate_shut: Rc<Cell<bool>>,
    /// Forgets that write; queued as a microtask with it.
    forget_gate: Closure<dyn FnMut(JsValue)>,
}

struct Pending {
    sql: Rc<Sql>,
    /// The rows as a JSON array, without its closing bracket; empty when there are none.
    rows: RefCell<Vec<u8>>,
    queued: Cell<bool>,
    /// Why the last end-of-turn write failed, until the store reports it.
    failure: RefCell<Option<StoreError>>,
}

impl StepBatch {
    pub(crate) fn new(sql: Rc<Sql>) -> Self {
        let pending = Rc::new(Pending {
            sql,
            rows: RefCell::default(),
            queued: Cell::new(false),
            failure: RefCell::default(),
        });
        // A weak reference: the closure lives in the batch and must not keep it alive. A
        // Worker built with `--panic-unwind` asks for unwind safety: a panic while writing
        // could only lose the turn's rows, whose steps then run again as after a crash.
        let weak: AssertUnwindSafe<Weak<Pending>> = AssertUnwindSafe(Rc::downgrade(&pending));
        let end_of_turn = Closure::new(move |_: JsValue| {
            let weak = &weak;
            if let Some(pending) = weak.0.upgrade()
                && let Err(error) = pending.write()
            {
                super::ports::log_error("writing step rows", &JsValue::from_str(&error.0));
                *pending.failure.borrow_mut() = Some(error);
            }
        });
        let gate_shut = Rc::new(Cell::new(false));
        let shut = AssertUnwindSafe(Rc::clone(&gate_shut));
        let forget_gate = Closure::new(move |_: JsValue| {
            // Captures the whole wrapper, which is unwind safe: a flag can only be left set.
            let shut = &shut;
            shut.0.set(false);
        });
        StepBatch {
            pending,
            end_of_turn,
            gate_shut,
            forget_gate,
        }
    }

    /// Before a step closure runs: makes sure that a write of this turn has been issued if rows
    /// wait, so that the output gate holds what the closure sends until they are committed.
    pub(crate) fn before_closure(&self) -> Result<(), StoreError> {
        if self.pending.rows.borrow().is_empty() || self.gate_shut.get() {
            return self.report_failure();
        }
        self.write()?;
        self.gate_shut.set(true);
        drop(Promise::resolve(&JsValue::UNDEFINED).then(&self.forget_gate));
        Ok(())
    }

    /// Adds `step` of `task_id`, to be written by the end of the turn, or at once with the
    /// rows before it when they would exceed [`MAX_BYTES`].
    pub(crate) fn push(&self, task_id: &str, step: &StepRow) -> Result<(), StoreError> {
        let params = schema::step_params(task_id, step);
        let size: usize = params.iter().map(SqlValue::size).sum();
        if self.pending.rows.borrow().len() + size > MAX_BYTES {
            self.write()?;
        }
        if size > MAX_BYTES {
            return self.pending.sql.execute(schema::PUT_STEP, params);
        }
        self.report_failure()?;
        {
            let mut rows = self.pending.rows.borrow_mut();
            let separator = if rows.is_empty() { b'[' } else { b',' };
            rows.push(separator);
            schema::write_json_row(&mut rows, &params);
        }
        if !self.pending.queued.replace(true) {
            drop(Promise::resolve(&JsValue::UNDEFINED).then(&self.end_of_turn));
        }
        Ok(())
    }

    /// Writes the waiting rows now; reports a failed end-of-turn write once.
    pub(crate) fn write(&self) -> Result<(), StoreError> {
        self.report_failure()?;
        self.pending.write()
    }

    /// Drops the waiting rows (their task is gone) and any failure to write them.
    pub(crate) fn discard(&self) {
        self.pending.rows.borrow_mut().clear();
        self.pending.failure.borrow_mut().take();
    }

    fn report_failure(&self) -> Result<(), StoreError> {
        match self.pending.failure.borrow_mut().take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

impl Pending {
    fn write(&self) -> Result<(), StoreError> {
        self.queued.set(false);
        let mut rows = std::mem::take(&mut *self.rows.borrow_mut());
        if rows.is_empty() {
            return Ok(());
        }
        rows.push(b']');
        // Built from `str`s and ASCII punctuation only.
        let json = String::from_utf8(rows).map_err(|error| StoreError(error.to_string()))?;
        self.sql
            .execute(schema::PUT_STEPS_JSON, vec![SqlValue::Text(json)])
    }
}
