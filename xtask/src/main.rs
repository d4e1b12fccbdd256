//! Project automation for durable-mcp, run from the workspace as `cargo xtask <command>` (an
//! alias for a release build of this crate, see `.cargo/config.toml`).
//!
//! Commands:
//!
//! - `bench`: measures the engine's cost per step on the SQLite store against a bare SQLite
//!   insert of the same row, the replay time of a 10,000-step journal, and peak memory; then,
//!   through the native host over HTTP, `tasks/get` throughput and p50/p99 latency under 32
//!   keep-alive connections, and the host's memory with 10,000 parked tasks; prints tables.
//!   Then the Cloudflare host under workerd: `tasks/get` and task creation latency next to a
//!   bare Durable Object round trip and to a JavaScript floor (a JS Worker calling a JS SQLite
//!   object through RPC), `tasks/get` throughput under 16 clients against that floor's RPC
//!   insert, a step's cost next to a bare insert in an object, the
//!   slowest `tasks/get` during a 10,000-step run, and the deployed wasm's size (`bench worker`
//!   runs only this part). Between the two, the native host SIGKILLed and restarted under a
//!   backlog of 10,000 and 50,000 due tasks with a slow upstream: its first answer, `tasks/get`
//!   latency while draining, the drain time, exactly-once (`bench backlog` runs only this
//!   part). `--smoke` runs it all with tiny counts and judges no target. See the `bench`,
//!   `http_bench`, `backlog_bench` and `worker_bench` modules.
//! - `test`: every check CI runs (formatting, clippy, rustdoc, the wasm32 build, all tests,
//!   then `clients`, the smoke runs and `browser`), after installing what they need. See the
//!   `checks` module.
//! - `smoke`: `bench --smoke`, `size --smoke`, `sim` and `fuzz` with tiny counts, as `test`
//!   runs them, so that a broken command does not go unnoticed. See the `smoke` module.
//! - `demo`: runs `examples/report-task` natively with a demo report service beside it, or
//!   with `--worker` as a Worker under `wrangler dev`. See the `demo` module.
//! - `clients`: the official MCP conformance suite and official MCP clients against the
//!   conformance fixture server. See the `clients` module.
//! - `browser`: the story-demo page in headless Chromium against the example's native host
//!   and its Worker, with screenshots in `target/browser/`. See the `browser` module.
//! - `sim`: the deterministic simulation of the engine (`tests/sim`) over many seeds, in
//!   release: `sim --seeds N [--seed S]`. See the `sim` module.
//! - `fuzz`: the fuzz targets (property tests of the router, the duration grammar, the SQLite
//!   rows and the macros' arguments) in release, `fuzz --cases N` (default 100,000) each;
//!   prints the executions and time per target (`--debug`: as `cargo test` builds them). See
//!   the `fuzz` module.
//! - `size`: the deployed Worker's wasm size, and where its bytes go (code by crate, by the
//!   workspace's items, the largest functions) from a build that keeps the names (`--smoke`:
//!   from the deployed build, without names). See the `size` module.
//! - `public-api`: durable-mcp's public API as its rendered docs show it, against the committed
//!   listing (`--bless` rewrites it). See the `public_api` module.
//! - `help`: prints the usage.

mod auth_bench;
mod backlog_bench;
mod bench;
mod browser;
mod checks;
mod clients;
mod demo;
mod fuzz;
mod http_bench;
mod load;
mod public_api;
mod publish;
mod sim;
mod size;
mod smoke;
mod stats;
mod tick_reads;
mod wire_schemas;
mod worker_bench;
mod worker_target;
mod worker_tools;
mod workerd_cpu;
mod writer_floor;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  demo     run examples/report-task natively, with a demo report service beside it;
           `demo --worker` runs it as a Worker under wrangler dev
  test     run every check CI runs: fmt, clippy, rustdoc, the wasm32 build, all tests, clients,
           the smoke runs, browser
  clients  run the MCP conformance suite and official MCP clients against the fixture server
  bench    measure engine cost per step, bare SQLite insert cost, replay time and peak memory;
           tasks/get throughput and latency and creation throughput over HTTP with 1 worker
           and with one per core, host memory with 10,000 parked tasks (`bench native` runs
           only that part); the host killed and restarted under a backlog of 10,000 and
           50,000 slow tasks (`bench backlog` runs only that part); then the Cloudflare host
           under workerd (`bench worker` runs only that part); last, what MCP authorization
           adds to a poll on both hosts (`bench auth` runs only that part);
           `--smoke`: tiny counts and debug builds, no target judged
  browser  run the story-demo page in headless Chromium against the example's native host
           and its Worker; screenshots in target/browser/
  sim      run the deterministic simulation: `sim --seeds N [--seed S]`; prints seeds run,
           events, faults injected and violations; fails on any violation
  fuzz     run the fuzz targets long, in release: `fuzz [--cases N]` (default 100000 each);
           prints the executions and time per target; fails on any failing case; `--debug`
           builds them as `cargo test --workspace --all-features` does
  public-api
           compare durable-mcp's rendered public API (after `cargo doc --all-features`) with
           durable-mcp/public-api.txt; `--bless` writes the listing anew
  size     build examples/report-task as deployed and print its wasm size, then where the bytes
           go (code by crate and by workspace item, largest functions) from a build with names;
           `--smoke`: from the deployed build instead (no names, no second build)
  smoke    run bench --smoke, size --smoke, sim --seeds 20 and fuzz --cases 50, as `test` does
  help     print this message
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["test"] => checks::run(),
        ["clients"] => clients::run(),
        ["browser"] => browser::run(),
        ["demo"] => demo::run(),
        ["demo", "--worker"] => demo::run_worker(),
        ["bench", "worker", args @ ..] => {
            bench::Scale::parse("bench worker", args).and_then(worker_bench::run)
        }
        ["bench", "backlog", args @ ..] => {
            bench::Scale::parse("bench backlog", args).and_then(backlog_bench::run)
        }
        ["bench", "reads"] => tick_reads::run(),
        ["bench", "auth", args @ ..] => bench::Scale::parse("bench auth", args)
            .and_then(|scale| auth_bench::run(&std::env::current_exe()?, scale)),
        ["bench", "native", args @ ..] => bench::Scale::parse("bench native", args)
            .and_then(|scale| http_bench::run(&std::env::current_exe()?, scale)),
        ["bench", args @ ..] => bench::Scale::parse("bench", args).and_then(bench::run),
        ["size", args @ ..] => bench::Scale::parse("size", args).and_then(size::run),
        ["smoke"] => smoke::run(),
        ["public-api"] => public_api::check(false),
        ["public-api", "--bless"] => public_api::check(true),
        ["sim", args @ ..] => sim::run(args),
        ["fuzz", args @ ..] => fuzz::run(args),
        // Internal: one measurement in a process of its own (see `bench`).
        ["bench-child", kind, args @ ..] => bench::child(kind, args),
        [] | ["help" | "--help" | "-h"] => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprint!("xtask: unknown command {:?}\n\n{USAGE}", args.join(" "));
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error}");
            ExitCode::FAILURE
        }
    }
}
