//! The exactly-once check, from what the upstream recorded: each task's report was accepted,
//! and every send of it carried the one idempotency key of that task.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use serde_json::json;

use super::create::Created;
use crate::report_api::{FakeReportService, report_for};

/// How many problems a verdict describes; it counts them all.
const EXAMPLES: usize = 10;

/// Whether every task finished exactly once.
#[derive(Clone, Debug, Default)]
pub struct ExactlyOnce {
    /// Tasks in all.
    pub tasks: usize,
    /// Tasks seen `completed` with the text their tool answers on success.
    pub completed: usize,
    /// Tasks seen ended otherwise: `failed`, `cancelled`, or completed with another result
    /// (a tool error, such as a step that ran out of attempts).
    pub ended_otherwise: usize,
    /// Accepted sends beyond the first of their recipient: repeats that the idempotency key
    /// lets the service drop (a send whose answer a kill cut off). Not a violation.
    pub repeated_sends: usize,
    /// Tasks (and recipients of no task) with anything that breaks exactly-once: not
    /// completed as expected, no accepted send, a send under another key or of another body,
    /// never fetched; a send for no task.
    pub violations: usize,
    /// The first few problems, described.
    pub examples: Vec<String>,
}

impl ExactlyOnce {
    /// Whether it holds: every task completed as expected, and nothing broke it.
    pub fn holds(&self) -> bool {
        self.violations == 0 && self.completed == self.tasks
    }
}

impl fmt::Display for ExactlyOnce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.holds() {
            write!(
                f,
                "holds: {} of {} tasks completed",
                self.completed, self.tasks
            )?;
        } else {
            write!(
                f,
                "BROKEN: {} of {} tasks completed as expected, {} ended otherwise; {} with a \
                 problem",
                self.completed, self.tasks, self.ended_otherwise, self.violations
            )?;
            for example in &self.examples {
                write!(f, "\n  {example}")?;
            }
        }
        if self.repeated_sends > 0 {
            write!(
                f,
                "; {} repeated sends under their task's key",
                self.repeated_sends
            )?;
        }
        Ok(())
    }
}

/// Checks the upstream's record of `tasks`. `completed` is how many the pollers saw complete
/// as expected; `otherwise` describes the others they saw end, by index in `tasks`.
pub(super) fn check(
    service: &FakeReportService,
    tasks: &[Created],
    completed: usize,
    otherwise: &[(usize, String)],
) -> ExactlyOnce {
    let mut verdict = ExactlyOnce {
        tasks: tasks.len(),
        completed,
        ended_otherwise: otherwise.len(),
        ..ExactlyOnce::default()
    };
    let otherwise: HashMap<usize, &str> = otherwise
        .iter()
        .map(|(index, description)| (*index, description.as_str()))
        .collect();
    let mut sends = service.sends_by_recipient();
    let fetches = service.fetch_counts();
    for (index, task) in tasks.iter().enumerate() {
        let mut problems = Vec::new();
        if let Some(description) = otherwise.get(&index) {
            problems.push((*description).to_owned());
        }
        if fetches.get(&task.to).copied().unwrap_or(0) == 0 {
            problems.push("never fetched".to_owned());
        }
        let sent = sends.remove(&task.to).unwrap_or_default();
        let accepted = sent.iter().filter(|send| send.status == 200).count();
        if accepted == 0 {
            problems.push(format!("no accepted send of {}", sent.len()));
        }
        verdict.repeated_sends += accepted.saturating_sub(1);
        let key = format!("{}:send", task.id);
        let keys: BTreeSet<Option<&str>> =
            sent.iter().map(|s| s.idempotency_key.as_deref()).collect();
        if keys.iter().any(|k| *k != Some(key.as_str())) {
            problems.push(format!("sends under keys {keys:?}, not only {key:?}"));
        }
        let report = json!({ "to": task.to, "report": report_for(&task.to) });
        if sent.iter().any(|send| send.body != report) {
            problems.push("a send of another body".to_owned());
        }
        if !problems.is_empty() {
            verdict.problem(format!(
                "task {} ({}): {}",
                task.id,
                task.to,
                problems.join("; ")
            ));
        }
    }
    // Left over: recipients of no task.
    for (to, sent) in sends {
        verdict.problem(format!(
            "{} sends to {to}, which no task sends to",
            sent.len()
        ));
    }
    verdict
}

impl ExactlyOnce {
    fn problem(&mut self, description: String) {
        self.violations += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(description);
        }
    }
}
