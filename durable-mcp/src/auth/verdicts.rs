//! Verdicts on tokens kept for a short while, so that a client polling with the same token
//! costs one check a minute rather than one per request. Tokens are kept by their SHA-256,
//! never as themselves.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{Principal, TokenRefusal};
use crate::core::Timestamp;

/// The longest a verdict is reused.
pub(crate) const KEEP_FOR: Duration = Duration::from_secs(60);

/// The most verdicts kept; past it they are all dropped (a flood of distinct tokens must not
/// grow memory).
const CAPACITY: usize = 4096;

/// A verdict, and until when it holds.
type Kept = (Result<Principal, TokenRefusal>, Timestamp);

/// Verdicts by token digest.
#[derive(Default)]
pub(crate) struct Verdicts(RefCell<HashMap<[u8; 32], Kept>>);

impl std::fmt::Debug for Verdicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verdicts")
            .field("kept", &self.0.borrow().len())
            .finish()
    }
}

impl Verdicts {
    /// The verdict on `token` if one holds at `now`.
    pub(crate) fn get(
        &self,
        token: &str,
        now: Timestamp,
    ) -> Option<Result<Principal, TokenRefusal>> {
        match self.0.borrow().get(&digest(token)) {
            Some((verdict, until)) if now < *until => Some(verdict.clone()),
            _ => None,
        }
    }

    /// Keeps `verdict` on `token` until `until`, at most [`KEEP_FOR`] after `now`.
    pub(crate) fn keep(
        &self,
        token: &str,
        verdict: Result<Principal, TokenRefusal>,
        now: Timestamp,
        until: Timestamp,
    ) {
        let until = until.min(now.saturating_add(KEEP_FOR));
        if until <= now {
            return;
        }
        let mut kept = self.0.borrow_mut();
        if kept.len() >= CAPACITY {
            kept.clear();
        }
        kept.insert(digest(token), (verdict, until));
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}
