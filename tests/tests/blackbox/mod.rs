//! Helpers of the black-box HTTP tests: the server under test, schema validation and a
//! 2025-era client.
#![allow(dead_code)]

pub mod client_2025;
pub mod schema;
pub mod target;

pub use schema::{Spec, assert_result, assert_valid};
pub use target::Target;
