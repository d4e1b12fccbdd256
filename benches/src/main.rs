//! The benchmarks of durable-mcp. `cargo xtask bench ...` and `cargo xtask size ...` hand their
//! command line to this binary (xtask's `USAGE` describes them); each part has a module of its
//! own, whose doc says what it measures: `engine` (a step's cost), `tick_reads` (the store
//! reads of a tick, counted, and held by a test), `native` (the host over HTTP), `backlog` (a
//! restart under a backlog), `worker` (the Cloudflare host under workerd; `bench cold` runs
//! only its cold starts), `listen` (push over `subscriptions/listen`), `auth` (what
//! authorization adds to a poll) and `size` (where the deployed Worker's bytes go).

mod auth;
mod backlog;
mod engine;
mod listen;
mod native;
mod procfs;
mod scale;
mod size;
mod stats;
mod tick_reads;
mod worker;

use std::process::ExitCode;

use scale::Scale;
use xtask::Result;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["bench", "worker", rest @ ..] => part("bench worker", rest, worker::run),
        // The cold starts of `bench worker`, alone.
        ["bench", "cold", rest @ ..] => part("bench cold", rest, worker::run_cold),
        ["bench", "backlog", rest @ ..] => part("bench backlog", rest, backlog::run),
        ["bench", "native", rest @ ..] => part("bench native", rest, native::run),
        ["bench", "auth", rest @ ..] => part("bench auth", rest, auth::run),
        ["bench", "listen", rest @ ..] => part("bench listen", rest, listen::run),
        ["bench", "reads"] => Err("the store reads of a tick are a test now: cargo test \
                                   -p durable-mcp-benches tick_reads; `cargo xtask bench` \
                                   prints them too"
            .into()),
        ["bench", rest @ ..] => part("bench", rest, all),
        ["size", rest @ ..] => Scale::parse("size", rest).and_then(size::run),
        // Internal: one measurement in a process of its own (see `engine` and `native::load`).
        ["bench-child", kind, rest @ ..] => engine::child(kind, rest),
        _ => Err(format!(
            "unknown command {:?}: run the benches through `cargo xtask bench` or `cargo xtask \
             size` (`cargo xtask help` lists them)",
            args.join(" ")
        )
        .into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask <command> [--smoke]`: runs `run` at the scale `rest` asks for, a smoke run
/// saying first what it is.
fn part(command: &str, rest: &[&str], run: fn(Scale) -> Result<()>) -> Result<()> {
    let scale = Scale::parse(command, rest)?;
    scale.announce(command);
    run(scale)
}

/// `cargo xtask bench`: every part, one table after another.
fn all(scale: Scale) -> Result<()> {
    engine::run(scale)?;
    tick_reads::print()?;
    native::run(scale)?;
    backlog::run(scale)?;
    worker::run(scale)?;
    listen::run(scale)?;
    auth::run(scale)
}
