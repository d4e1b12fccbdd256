//! Behaviour tests of durable-mcp live in `tests/`. This library holds what they share with
//! the benchmarks (an HTTP client, a way to run example servers, the backlog scenario) and
//! makes the Rust blocks of the README and the docs compile and run as doctests.

pub mod backlog;
pub mod children;
pub mod http;
pub mod inspector;
pub mod issuer;
pub mod listen;
pub mod mcp;
pub mod report_api;
pub mod server;
pub mod wait;
pub mod workerd;

#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../../README.md")]
    struct Readme;

    #[doc = include_str!("../../docs/how-it-works.md")]
    struct HowItWorks;

    #[doc = include_str!("../../docs/macros.md")]
    struct Macros;

    #[doc = include_str!("../../docs/testing.md")]
    struct Testing;

    #[doc = include_str!("../../docs/authorization.md")]
    struct Authorization;

    /// Only the worked example of "Changing a task's code" runs: the Worker blocks are
    /// `ignore`d here and built by `deploying_recipe.rs` and the workerd tests.
    #[doc = include_str!("../../docs/deploying.md")]
    struct Deploying;
}
