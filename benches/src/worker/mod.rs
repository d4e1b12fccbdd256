//! `cargo xtask bench worker`, a part of `cargo xtask bench`: the Cloudflare host under workerd (`wrangler dev`, wrangler
//! 4.86.0), measured in one run against floors measured in the same run.
//!
//! The bench Worker (`benches/worker`) serves the conformance fixtures through durable-mcp
//! beside `Floor`, a bare Durable Object. Beside it runs the **JavaScript floor**
//! (`benches/floor-js`, plain JS served without a build), what the TypeScript reference
//! stands on: a JS Worker calling a JS SQLite Durable Object (`extends DurableObject`) through
//! RPC, `ping()` that returns at once and `insert(body)` that inserts one 120-byte row.
//!
//! First, the **cold start** (`cold`; `cargo xtask bench cold` runs only it), while no other
//! Worker runs: the bench Worker, the JS floor, the **Rust floor** (`benches/floor-rs`: the JS
//! floor's Worker and object written with workers-rs, built as the bench Worker is, nothing
//! else) and report-task as deployed (the root `wrangler.toml`), started in rotation
//! [`COLD_STARTS`] times each, one at a time, each with a new state directory and no request
//! before the measurement. On one new keep-alive connection: the first create (`tools/call`
//! returning a task; for a floor, a new object's first insert), the first get of it
//! (`tasks/get`; a floor's `read()` of that row), then ten more pairs. Printed: the median (and
//! min-max) of the firsts over the starts, the median of the next pairs, each Rust Worker's
//! against the JS floor's, and the bench Worker's and report-task's against the Rust floor's.
//!
//! Then, from one keep-alive connection to each Worker, started afresh, in order:
//!
//! - **floor**: `GET /floor/ping/<name>`, a Worker-to-object round trip that does nothing;
//! - **tasks/get**: on one completed task, through the router and the task's object;
//! - **create**: `tools/call` of `many_steps` with `count: 0` (the task runs right after);
//! - **per step**: `many_steps` with 1,000 no-op steps, timed from the call until `tasks/get`
//!   says completed, less the same for 0 steps, over 1,000; next to the bare object inserting
//!   20,000 rows (one statement each) less inserting none, over 20,000;
//! - **responsiveness**: the slowest `tasks/get` of a task while it runs 10,000 no-op steps;
//! - **the poll's parts**: `GET /floor/none` (the Worker answers at once), `GET
//!   /floor/rpc-ping/<name>` (a Durable Object RPC call to the bare object, the hop `tasks/get`
//!   takes) and `GET /floor/rpc-sql/<name>` (the same, the object making three reads by key),
//!   from which the breakdown of a poll is printed (Worker, hop, object, SQL);
//! - **context**, printed beside the floor: `server/discover` (the Worker alone), a JSON body
//!   sent to a bare object and back, a `tasks/get` body read by the Worker around the floor's
//!   round trip and answered back (what a `tasks/get` pays besides the round trip), a round
//!   trip to a new object, and a new object that creates a table, inserts a row and sets its
//!   alarm (what a durable creation pays at least);
//! - **JS floor**: `GET /ping/<name>` and `POST /insert/<name>` on the JavaScript floor, the
//!   RPC ping and the RPC insert, which `tasks/get`'s p50 and p90 should not exceed;
//! - **workerd CPU per request** (after the latencies): the CPU time, read from `/proc`, of the
//!   workerd process that runs each Worker and its objects (not wrangler's proxy, not the
//!   bench) per `tasks/get`, JS RPC insert, JS RPC ping, bench Worker answering at once, and its
//!   RPC call to a bare object, over [`CPU_ROUNDS`] interleaved rounds of [`CPU_REQUESTS`]:
//!   unlike latency it does not grow with the machine's other load, and it is what the
//!   throughput under many clients comes down to;
//! - **throughput** (after the latencies, before the per-step runs): [`CLIENTS`] concurrent
//!   clients, each on its own keep-alive connection, sending `tasks/get` of one completed task,
//!   then the JS floor's RPC insert into one object, then its RPC ping, for [`ROUND`] each,
//!   over [`ROUNDS`] rounds summed: requests per second, and `tasks/get` against the insert
//!   (at least 0.9).
//!
//! Each latency is sampled [`SAMPLES`] times, interleaved with the floors (p50, p90, p99); each
//! per-step figure is the median of [`STEP_RUNS`] runs, after one unmeasured run. Then the
//! wasm size of `examples/report-task` (the Worker the root `wrangler.toml` deploys), raw and
//! gzipped, built as deployed: with wasm-opt (`cargo xtask size` says where its bytes go).
//! Targets are printed next to the figures, never enforced.
//!
//! A smoke run ([`Scale::Smoke`]) takes a few samples, requests and steps of each, one cold
//! start of each Worker, and the report-task build the Worker tests make (no wasm-opt; `cargo
//! xtask size --smoke` runs that).

mod client;
mod cold;
mod cpu;
mod measure;
mod table;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use durable_mcp_tests::http::Connection;
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::{WorkerProcess, build_worker, build_worker_optimized};
use xtask::Result;
use xtask::process::workspace_root;
use xtask::{worker_target, worker_tools};

use crate::scale::Scale;
use crate::stats::{Ranked, per_second};
use cpu::Runtime;

/// The bench Worker's crate, relative to the workspace root.
pub const BENCH_WORKER: &str = "benches/worker";
/// Latency samples per measurement.
const SAMPLES: usize = 400;
/// Runs of each per-step measurement.
const STEP_RUNS: usize = 15;
/// Steps (and floor inserts) per per-step run.
const STEPS: u64 = 1_000;
/// Inserts per floor run: enough rows that their time stands out of the request's noise.
const INSERTS: u64 = 20_000;
/// Steps of the task polled during the responsiveness measurement.
const LONG_RUN: u64 = 10_000;
/// The JavaScript floor: a plain-JS Worker and SQLite Durable Object, served without a build.
const JS_FLOOR: &str = "benches/floor-js";
/// The Rust floor of the cold start: the JS floor's Worker and object in workers-rs.
const RUST_FLOOR: &str = "benches/floor-rs";
/// Concurrent clients of the throughput measurement, each on its own keep-alive connection.
const CLIENTS: usize = 16;
/// Rounds of the throughput measurement; each drives every request kind once, in turn.
const ROUNDS: usize = 2;
/// How long each request kind is driven per round.
const ROUND: Duration = Duration::from_secs(5);

/// What the Worker bench does at a scale.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Latency samples per measurement.
    samples: usize,
    /// Runs of each per-step measurement.
    step_runs: usize,
    /// Steps (and floor inserts) per per-step run.
    steps: u64,
    /// Inserts per floor run.
    inserts: u64,
    /// Steps of the task polled during the responsiveness measurement.
    long_run: u64,
    /// Concurrent clients of the throughput measurement.
    clients: usize,
    /// Rounds of the throughput measurement.
    rounds: usize,
    /// How long each request kind is driven per round.
    round: Duration,
    /// Sequential requests of each kind per round of the CPU measurement.
    cpu_requests: u32,
    /// Rounds of the CPU measurement.
    cpu_rounds: usize,
    /// Whether report-task is built as deployed (wasm-opt) before its size is read.
    optimized: bool,
    /// Cold starts of each Worker.
    cold_starts: usize,
}

impl Plan {
    fn of(scale: Scale) -> Plan {
        match scale {
            Scale::Full => Plan {
                samples: SAMPLES,
                step_runs: STEP_RUNS,
                steps: STEPS,
                inserts: INSERTS,
                long_run: LONG_RUN,
                clients: CLIENTS,
                rounds: ROUNDS,
                round: ROUND,
                cpu_requests: CPU_REQUESTS,
                cpu_rounds: CPU_ROUNDS,
                optimized: true,
                cold_starts: COLD_STARTS,
            },
            Scale::Smoke => Plan {
                samples: 3,
                step_runs: 1,
                steps: 10,
                inserts: 100,
                long_run: 200,
                clients: 2,
                rounds: 1,
                round: Duration::from_millis(500),
                cpu_requests: 3,
                cpu_rounds: 1,
                optimized: false,
                cold_starts: 1,
            },
        }
    }
}

/// Builds the bench Worker, the Rust floor and report-task, measures their cold starts and the
/// JS floor's, starts the bench Worker and the JS floor, runs every other measurement, prints
/// the tables.
pub fn run(scale: Scale) -> Result<()> {
    let plan = Plan::of(scale);
    let root = workspace_root();
    build_all(&root, &plan)?;
    // First, while no other Worker runs.
    let cold = cold::measure(&root, &plan)?;
    eprintln!("bench: starting the bench Worker and the JavaScript floor ({JS_FLOOR})");
    // Both are served as they are: the bench Worker was built above.
    let worker = worker_target::start_js(&root, BENCH_WORKER)?;
    let js_floor = worker_target::start_js(&root, JS_FLOOR)?;
    let mut bench = Bench::new(worker.process(), js_floor.process(), plan)?;
    let runtime =
        |process: &WorkerProcess| Runtime::of_group(process.process_group(), process.port());
    let runtimes = runtime(worker.process()).zip(runtime(js_floor.process()));

    let latencies = bench.latencies()?;
    let cpu = match &runtimes {
        Some((rust, js)) => Some(bench.cpu_per_request(rust, js)?),
        None => None,
    };
    let throughput = bench.throughput()?;
    let (step, insert) = bench.per_step()?;
    let slowest = bench.slowest_get_during_long_run()?;
    let (raw, gzipped) = wasm_size(&root.join("examples/report-task/build/index_bg.wasm"))?;
    table::print_cold(&cold);
    table::print_latencies(&plan, &latencies);
    table::print_cpu(&plan, cpu.as_ref());
    table::print_throughput(&plan, &throughput);
    table::print_others(&plan, step, insert, slowest, (raw, gzipped));
    Ok(())
}

/// `cargo xtask bench cold`: builds the bench Worker, the Rust floor and report-task, measures
/// only their cold starts and the JS floor's, prints the table.
pub fn run_cold(scale: Scale) -> Result<()> {
    let plan = Plan::of(scale);
    let root = workspace_root();
    build_all(&root, &plan)?;
    table::print_cold(&cold::measure(&root, &plan)?);
    Ok(())
}

/// Installs the Worker tools, then builds the bench Worker and the Rust floor (as the tests
/// build Workers) and report-task (as deployed if `plan.optimized`).
fn build_all(root: &Path, plan: &Plan) -> Result<()> {
    if plan.optimized {
        worker_tools::ensure_wasm_opt()?;
    } else {
        worker_tools::ensure()?;
    }
    eprintln!(
        "bench: building the bench Worker, the Rust floor and examples/report-task (worker-build)"
    );
    build(&root.join(BENCH_WORKER), false)?;
    // Cheap after the bench Worker: the same profile and target directory, so the `worker`
    // crate and its dependencies are already compiled.
    build(&root.join(RUST_FLOOR), false)?;
    build(&root.join("examples/report-task"), plan.optimized)
}

/// Builds the Worker crate in `dir`: as deployed if `optimized`, else as the tests build it.
fn build(dir: &Path, optimized: bool) -> Result<()> {
    std::panic::catch_unwind(|| {
        if optimized {
            build_worker_optimized(dir);
        } else {
            build_worker(dir);
        }
    })
    .map_err(|_| format!("worker-build failed in {}", dir.display()).into())
}

/// Cold starts of each Worker (the bench Worker, the JS floor, the Rust floor, report-task), in
/// rotation.
const COLD_STARTS: usize = 5;
/// Sequential requests of each kind per round of the CPU measurement.
const CPU_REQUESTS: u32 = 300;
/// Rounds of the CPU measurement; each drives every kind once, in turn.
const CPU_ROUNDS: usize = 3;

/// The module's size, raw and gzipped (`gzip -9`).
pub fn wasm_size(path: &Path) -> Result<(u64, u64)> {
    let raw = std::fs::metadata(path)?.len();
    let gzipped = Command::new("gzip").arg("-9c").arg(path).output()?;
    if !gzipped.status.success() {
        return Err("gzip failed".into());
    }
    Ok((raw, gzipped.stdout.len() as u64))
}

/// A keep-alive connection to the bench Worker and the MCP request shapes, and one to the
/// JavaScript floor.
struct Bench {
    connection: Connection,
    client: McpClient,
    js: Connection,
    js_address: SocketAddr,
    plan: Plan,
}

/// The requests whose CPU cost is measured.
#[derive(Clone, Copy)]
enum CpuProbe {
    /// `tasks/get` of a completed task, through the router and the task's object.
    Get,
    /// The JS floor's RPC insert.
    JsInsert,
    /// The JS floor's RPC ping.
    JsPing,
    /// The bench Worker answering at once.
    None,
    /// The bench Worker's RPC call to a bare object that answers at once.
    RpcPing,
}

/// The kinds in the order they are measured and printed, with their rows' labels.
const CPU_PROBES: [(CpuProbe, &str); 5] = [
    (CpuProbe::Get, "tasks/get of a completed task"),
    (CpuProbe::JsInsert, "JS floor: RPC insert"),
    (CpuProbe::JsPing, "JS floor: RPC ping"),
    (CpuProbe::None, "floor: the bench Worker answers at once"),
    (
        CpuProbe::RpcPing,
        "floor: the bench Worker's RPC call to a bare object",
    ),
];

/// The CPU time one request of each of [`CPU_PROBES`] cost its Worker's runtime.
struct CpuCosts([Option<Duration>; CPU_PROBES.len()]);

/// The requests [`CLIENTS`] clients completed over the [`ROUNDS`] rounds, and the time they took.
struct Rate {
    done: u64,
    took: Duration,
}

impl Rate {
    fn per_second(&self) -> f64 {
        per_second(self.done, self.took)
    }
}

/// Every throughput measured.
struct Throughput {
    /// `tasks/get` of one completed task.
    get: Rate,
    /// The JS floor's RPC insert into one object.
    js_insert: Rate,
    /// The JS floor's RPC ping of one object.
    js_ping: Rate,
}

/// Every latency measured.
struct Latencies {
    /// A round trip to an existing bare object.
    floor: Latency,
    /// `server/discover`, answered by the Worker alone.
    worker: Latency,
    /// `tasks/get` through the router and the task's object.
    get: Latency,
    /// `tools/call` creating a task (a new object).
    create: Latency,
    /// A round trip to a new bare object.
    fresh: Latency,
    /// A tasks/get's internal call, sent to a bare object that reads it and answers it back.
    echo: Latency,
    /// A client's tasks/get body read by the Worker, the floor's round trip, and the body
    /// answered back.
    read: Latency,
    /// A round trip to a new bare object that creates a table, inserts one row and sets its
    /// alarm: the least a durable creation does.
    fresh_insert: Latency,
    /// The JS floor: its Worker calls `ping()` on an existing JS SQLite object through RPC.
    js_ping: Latency,
    /// The JS floor: its Worker calls `insert(body)` on an existing JS SQLite object through
    /// RPC, which inserts one row.
    js_insert: Latency,
    /// A request the bench Worker answers at once, touching no object.
    none: Latency,
    /// The bench Worker calls a bare Rust object through Durable Object RPC, as it reaches a
    /// task's object; the object answers at once.
    rpc_ping: Latency,
    /// The same call, the object running three reads by primary key first.
    rpc_sql: Latency,
}

/// The p50, p90 and p99 of a set of samples.
struct Latency {
    p50: Duration,
    p90: Duration,
    p99: Duration,
}

impl Latency {
    /// The percentiles of `samples` (at least one: every plan takes some).
    fn of(samples: Vec<Duration>) -> Latency {
        let ranked = Ranked::lowest_first(samples);
        let at = |q: f64| {
            ranked
                .percentile(q)
                .expect("a latency has at least one sample")
        };
        Latency {
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
        }
    }
}
