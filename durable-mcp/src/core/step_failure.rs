//! How a step failed for good: the failure a body sees, and its JSON text in the step's row.

use serde_json::json;

use super::journal::StepRow;

/// Why a step failed for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepFailureKind {
    /// The closure said no attempt could succeed ([`StepError::non_retryable`]).
    ///
    /// [`StepError::non_retryable`]: crate::StepError::non_retryable
    NonRetryable,
    /// Every attempt the policy allows failed.
    AttemptsExhausted,
    /// Every attempt the policy allows failed, the last by outlasting the step's timeout.
    TimedOut,
}

impl StepFailureKind {
    /// The name stored in the journal.
    pub const fn as_str(self) -> &'static str {
        match self {
            StepFailureKind::NonRetryable => "non_retryable",
            StepFailureKind::AttemptsExhausted => "attempts_exhausted",
            StepFailureKind::TimedOut => "timed_out",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::NonRetryable, Self::AttemptsExhausted, Self::TimedOut]
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }
}

/// A step's final failure, as journaled in its row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepFailure {
    /// Why the step failed for good.
    pub kind: StepFailureKind,
    /// How many attempts ran.
    pub attempts: u32,
    /// The last attempt's error.
    pub message: String,
}

impl StepFailure {
    /// The JSON text stored in the row's `result`.
    pub fn to_json(&self) -> String {
        let kind = self.kind.as_str();
        json!({ "kind": kind, "attempts": self.attempts, "message": self.message }).to_string()
    }

    /// The failure recorded in a failed row.
    pub fn of_row(row: &StepRow) -> StepFailure {
        let stored = row.result.as_deref().and_then(|text| {
            let value: serde_json::Value = serde_json::from_str(text).ok()?;
            Some(StepFailure {
                kind: StepFailureKind::parse(value["kind"].as_str()?)?,
                attempts: u32::try_from(value["attempts"].as_u64()?).ok()?,
                message: value["message"].as_str()?.to_owned(),
            })
        });
        stored.unwrap_or_else(|| StepFailure {
            kind: StepFailureKind::AttemptsExhausted,
            attempts: row.attempt,
            message: row
                .last_error
                .clone()
                .unwrap_or_else(|| format!("step {:?} failed", row.key)),
        })
    }
}
