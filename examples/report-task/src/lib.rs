//! `report-task`: the smallest useful durable-mcp server, natively and as a Cloudflare Worker.
//!
//! | tool | kind | behaviour |
//! | --- | --- | --- |
//! | `send_report` | task | fetches a report for `to`, cools off durably, sends it (retried) |
//! | `approve_report` | task | fetches the report for `to`, asks `Send "<title>" to <to>?`, sends it only on an accepted `approve: true`, else discards it |
//! | `echo` | plain | answers with its `m` argument |
//!
//! One source, two hosts: `src/main.rs` serves [`server`] natively, and built for
//! `wasm32-unknown-unknown` by worker-build (the root `wrangler.toml`) the same tools run as a
//! Cloudflare Worker (`src/worker.rs`), each task in its own Durable Object.
//!
//! Configuration, natively from the environment (in a Worker, `REPORT_API_URL` and
//! `REPORT_COOL_OFF` are Worker variables; `PORT` and `DURABLE_MCP_DATA` do not apply):
//!
//! - `PORT`: the port of the MCP endpoint `http://127.0.0.1:<PORT>/mcp` (default 8787; `0`
//!   picks a free one).
//! - `DURABLE_MCP_DATA`: the state directory holding the task database (default
//!   `./.durable-mcp`).
//! - `REPORT_API_URL`: the base URL of the report service (default `http://127.0.0.1:8788`);
//!   it answers `GET /data?to=<to>` and `POST /send`.
//! - `REPORT_COOL_OFF`: how long `send_report` waits between fetching and sending (default
//!   `5s`; any duration such as `250ms`, `3s` or `1m`).
//!
//! Kill the process at any point and start it again on the same state directory: every task
//! resumes where its journal says, and no completed step runs twice.

mod config;
mod tools;
mod upstream;

#[cfg(target_arch = "wasm32")]
mod worker;

pub use config::Config;
pub use tools::server;
pub use upstream::{Report, Upstream};
