//! Behaviour tests of durable-mcp live in `tests/`. This library only makes the Rust blocks of
//! the README and the docs compile and run as doctests.

#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../../README.md")]
    struct Readme;

    #[doc = include_str!("../../docs/how-it-works.md")]
    struct HowItWorks;
}
