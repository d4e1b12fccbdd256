//! Input, as the activation decides it: elicitations the body waits for, standing offers, and
//! the checks that take an offer's answer.

use std::time::Duration;

use super::{Activation, CheckNext, Decision, ElicitNext, Serialised, rows, values};
use crate::core::error::EngineError;
use crate::core::journal::{InputRow, StepKind, Write};
use crate::core::outcome::Suspension;
use crate::core::time::Timestamp;
use crate::core::trace;

impl Activation {
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
    /// The key was claimed ([`claim`](Self::claim)) when the body offered it.
    pub fn offer(&mut self, key: &str, request: Serialised, now: Timestamp) -> Decision<()> {
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

    /// The input row under `key`, if one is recorded, and recorded as `kind`.
    fn recorded_input(&mut self, key: &str, kind: StepKind) -> Decision<Option<&InputRow>> {
        self.check_kind(key, kind)?;
        Ok(self.journal.inputs.get(key))
    }

    /// An input request as stored, or the task fails here.
    fn input_request(&mut self, key: &str, request: Serialised) -> Decision<String> {
        values::input_request(self.limits(), key, request).map_err(|error| self.fail(error))
    }
}
