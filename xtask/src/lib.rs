//! The library half of xtask: how the workspace's automation starts other programs. The
//! `cargo xtask` commands (this package's binary) and the benches (`durable-mcp-benches`)
//! both use it, so that there is one way to run a process, start a native host or a Worker,
//! and install the tools they need.

pub mod process;
pub mod server;
pub mod worker_target;
pub mod worker_tools;

pub use process::Result;
