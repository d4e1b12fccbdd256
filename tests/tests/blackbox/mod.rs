//! Helpers of the black-box HTTP tests: the server under test, schema validation and a
//! 2025-era client; and the suite's 2025 section (`era_2025`).
#![allow(dead_code)]

pub mod client_2025;
mod era_2025;
pub mod schema;
pub mod target;

pub use schema::{Spec, assert_complete_ack, assert_result, assert_valid};
pub use target::Target;
