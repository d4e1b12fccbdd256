//! The engine's ports inside a Durable Object: the JavaScript clock, `setTimeout`, and the
//! object's one alarm.

use std::rc::Rc;
use std::time::Duration;

use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::{JsFuture, spawn_local};
use worker::{Delay, js_sys};

use crate::core::Timestamp;
use crate::runtime::alarm::AlarmMemory;
use crate::runtime::ports::delay_chunks;
use crate::runtime::{Clock, LocalBoxFuture, Scheduler, Timer};

/// The longest wait one `setTimeout` holds: workers-rs's [`Delay`] passes 32-bit milliseconds,
/// and a longer wait would fire at once.
const LONGEST_DELAY: Duration = Duration::from_millis(i32::MAX as u64);

/// `Date.now()`. Inside a Worker it advances only across I/O (timers included), which is why
/// the driver's regular yields also keep hand-off times honest.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsClock;

impl Clock for JsClock {
    fn now(&self) -> Timestamp {
        // Milliseconds since the epoch fit an f64 exactly; the cast drops no whole millisecond.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Timestamp(js_sys::Date::now() as u64)
    }
}

/// `setTimeout`, through workers-rs's `Delay`. A wait longer than a timer holds (2^31 − 1 ms,
/// about 24.8 days) runs as several timers one after another.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsTimer;

impl Timer for JsTimer {
    fn delay(&self, duration: Duration) -> LocalBoxFuture<'static, ()> {
        if duration <= LONGEST_DELAY {
            return Box::pin(Delay::from(duration));
        }
        Box::pin(async move {
            for chunk in delay_chunks(duration, LONGEST_DELAY) {
                Delay::from(chunk).await;
            }
        })
    }

    /// A zero-length timer: a new macrotask, so requests queued for the object (a
    /// `tasks/get` while a long run of steps goes on) are served before the body continues.
    fn yield_now(&self) -> LocalBoxFuture<'static, ()> {
        Box::pin(Delay::from(Duration::ZERO))
    }
}

/// The object's one alarm, set to the task's next wake-up after every scheduling write.
///
/// `setAlarm` and `deleteAlarm` are storage writes: the object's output gate holds every
/// response until they are durable, so they are issued without awaiting them, from the
/// synchronous [`Scheduler`] port. A failure is logged and forgotten (see `AlarmMemory`): the
/// next schedule of the same time writes it again, and meanwhile the alarm handler's backstop
/// covers it.
pub struct AlarmScheduler {
    storage: worker::Storage,
    /// The alarm as last set by this instance, to skip writes that change nothing; a write
    /// that fails is forgotten.
    memory: Rc<AlarmMemory>,
}

impl std::fmt::Debug for AlarmScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlarmScheduler")
            .field("current", &self.memory.remembered())
            .finish_non_exhaustive()
    }
}

impl AlarmScheduler {
    /// The scheduler of the object whose storage this is.
    pub fn new(storage: worker::Storage) -> Self {
        AlarmScheduler {
            storage,
            memory: Rc::new(AlarmMemory::new()),
        }
    }

    /// Sets the alarm to `at`, or clears it, whatever this instance believes is set.
    pub fn set(&self, at: Option<Timestamp>) {
        self.memory.written(at);
        let options = js_sys::Object::new();
        let raw = self.storage.as_raw();
        let written = match at {
            #[allow(clippy::cast_precision_loss)] // epoch milliseconds fit an f64
            Some(at) => {
                let when = js_sys::Date::new(&JsValue::from_f64(at.0 as f64));
                raw.set_alarm(when, options)
            }
            None => raw.delete_alarm(options),
        };
        match written {
            // Nobody waits for the write; a rejection is logged rather than left unhandled,
            // and forgotten so that the next schedule of `at` writes it again.
            Ok(promise) => {
                let memory = Rc::clone(&self.memory);
                spawn_local(async move {
                    if let Err(error) = JsFuture::from(promise).await {
                        memory.failed(at);
                        log_error("setting the alarm", &error);
                    }
                });
            }
            Err(error) => {
                self.memory.failed(at);
                log_error("setting the alarm", &error);
            }
        }
    }
}

impl Scheduler for AlarmScheduler {
    fn schedule(&self, _task_id: &str, at: Option<Timestamp>) {
        // One task per object: the task id names the object itself.
        if self.memory.needs_write(at) {
            self.set(at);
        }
    }
}

pub(crate) fn log_error(what: &str, error: &JsValue) {
    let message = error.as_string().unwrap_or_else(|| format!("{error:?}"));
    tracing::error!(target: crate::core::trace::TARGET,"{what} failed: {message}");
}
