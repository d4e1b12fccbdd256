//! `report-task`: the smallest useful durable-mcp server.
//!
//! | tool | kind | behaviour |
//! | --- | --- | --- |
//! | `send_report` | task | fetches a report for `to`, cools off durably, sends it (retried) |
//! | `approve_report` | task | asks the user to approve a report, answers with the decision |
//! | `echo` | plain | answers with its `text` argument |
//!
//! Configuration, all from the environment:
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

use durable_mcp::native::{HostError, NativeHost};

fn main() -> Result<(), HostError> {
    let config = config::Config::from_env()?;
    NativeHost::new(tools::server(config)).from_env()?.run()
}
