//! Behaviour tests of durable-mcp live in `tests/`; this library is empty.
