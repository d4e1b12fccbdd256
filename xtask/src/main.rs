//! Project automation for durable-mcp, run from the workspace as `cargo xtask <command>` (an
//! alias for a release build of this crate, see `.cargo/config.toml`). [`USAGE`] lists the
//! commands; each has a module of its own, whose doc says what it does. `bench` and `size` run
//! the benches crate (`benches/`, see the `benches` module). The library half of this crate
//! (`xtask::process`, `xtask::server`...) is how every command starts other programs.

mod benches;
mod browser;
mod checks;
mod clients;
mod demo;
mod fuzz;
mod public_api;
mod publish;
mod sim;
mod smoke;
mod wire_schemas;

use std::process::ExitCode;

/// What `cargo xtask help` prints: the one full description of the commands.
const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  demo     run examples/report-task natively, with a demo report service beside it;
           `demo --worker` runs it as a Worker under wrangler dev
  test     run every check CI runs: fmt, clippy, rustdoc, the wasm32 build, all tests, clients,
           the smoke runs, browser
  clients  run the MCP conformance suite and official MCP clients against the fixture server
           (natively, mounted in the axum-app service, and as a Worker)
  bench    measure engine cost per step, bare SQLite insert cost, replay time and peak memory,
           and count the store reads of a tick (a test of the benches crate holds the counts);
           tasks/get throughput and latency and creation throughput over HTTP with 1 worker
           and with one per core, the same tasks/get through the endpoint mounted in an axum
           service beside the host's own listener, host memory with 10,000 parked tasks
           (`bench native` runs only that part); the host killed and restarted under a backlog of 10,000 and
           50,000 slow tasks (`bench backlog` runs only that part); then the Cloudflare host
           under workerd, first the cold start of the Rust Workers and the JS floor (`bench
           worker` runs only that part, `bench cold` only its cold starts); then push over
           subscriptions/listen: how soon a stream shows a task's change beside the write's
           own response, on both hosts, and the native host's memory per stream and CPU per
           change with 248 streams open and with none (`bench listen` runs only that part);
           last, what MCP authorization adds to a poll on both hosts (`bench auth` runs only
           that part);
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
        ["bench" | "size", ..] => return benches::run(&args),
        ["smoke"] => smoke::run(),
        ["public-api"] => public_api::check(false),
        ["public-api", "--bless"] => public_api::check(true),
        ["sim", args @ ..] => sim::run(args),
        ["fuzz", args @ ..] => fuzz::run(args),
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
