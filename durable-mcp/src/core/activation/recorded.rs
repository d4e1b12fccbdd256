//! The values the context records for the body, so that replays see the same: clock readings,
//! random draws, and the sides of patch gates.

use super::{Activation, Decision, Stop, draws, rows};
use crate::core::error::EngineError;
use crate::core::journal::{StepKind, Write};
use crate::core::own_keys::OwnKey;
use crate::core::time::Timestamp;

impl Activation {
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
}

/// The error for a recorded value that does not read back as what its key holds.
fn corrupt_value(key: &str, text: &str) -> EngineError {
    EngineError::NotSerialisable {
        what: format!("the value recorded under {key:?}"),
        reason: format!("{text:?} is not what the key holds"),
    }
}
