//! Helpers of the black-box HTTP tests: the server under test and schema validation.
#![allow(dead_code)]

pub mod schema;
pub mod target;

pub use schema::{Spec, assert_result, assert_valid};
pub use target::Target;
