//! The native host measured over HTTP, the second table of `cargo xtask bench` (`bench
//! native` runs only this part).
//!
//! The measurements run the release build of `conformance-server` (built first, with
//! `cargo build --release -p conformance-server`, which builds its `conformance-axum` binary
//! too) as a child process on `127.0.0.1`, port 0, with a fresh state directory (see
//! `xtask::server`), and create their tasks through the MCP endpoint: `tools/call` of
//! `slow_compute`, declaring the Tasks extension, sleeping 3,000 s (the longest the fixture
//! accepts; far longer than a run).
//!
//! - `tasks/get` under load: [`LOAD_TASKS`] parked tasks; once every one is parked,
//!   the load generator (this executable, re-invoked as `bench-child load`, see the `load`
//!   module) polls them over [`CONNECTIONS`] keep-alive connections for a warm-up
//!   second and [`MEASURED`]. It reports throughput and p50/p99 latency; every response must
//!   be a `working` task, and one error fails the command. [`LOAD_RUNS`] runs, each on a fresh
//!   server: best and median. The server's and the generator's CPU time per request are shown
//!   too, to tell which side ran out of CPU.
//! - The same `tasks/get` under load against the mounted endpoint: the same fixtures served by
//!   [`MOUNTED`], `NativeHost::mount` in the `axum-app` example's service (its request
//!   tracing and its bearer check in front of `/mcp`, requests read on its tokio runtime and
//!   handed to the host's worker threads), with the same worker counts, tasks, connections
//!   and runs, interleaved with the native host's. Every request, the creations' and the load
//!   generator's, carries `Authorization: Bearer` with a token made for the run and given to
//!   the service as its `anonymous` user's (never printed), so the tasks have no principal
//!   and the same token reads them. The table shows its figures under the native host's, and
//!   the mounted endpoint's median throughput and latencies over the native host's, measured
//!   in the same run.
//! - Memory: [`PARKED_TASKS`] parked tasks; once every one is parked, the server's `VmRSS` and
//!   `VmHWM` (from `/proc/<pid>/status`).
//!
//! A smoke run ([`Scale::Smoke`]) does each with a few tasks, two connections and one short
//! load run per endpoint and worker count, on the debug build `cargo xtask clients` made.
//!
//! A task is parked when the store says so (see the `tasks` module). Targets are shown next to
//! the figures, never enforced (see the `table` module).

pub mod load;
mod table;
mod tasks;
mod writer_floor;

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use durable_mcp::settings::WORKERS_VAR;
use xtask::Result;
use xtask::process::{Profile, build_binary};
use xtask::server::NativeServer;

use crate::procfs::{cpu_time, status_kib};
use crate::scale::Scale;
use crate::stats::{Ranked, Spread, per_second};
use load::{BEARER_VAR, RESULT_PREFIX};
use tasks::{check_working, create_tasks, wait_parked};

/// The package and binary of the server measured.
const SERVER: &str = "conformance-server";

/// The binary of [`SERVER`]'s package that serves the same fixtures mounted in the
/// `axum-app` example's service.
const MOUNTED: &str = "conformance-axum";

/// The variable that gives [`MOUNTED`] its users and their tokens (`user:token,...`).
const TOKENS_VAR: &str = "AXUM_APP_TOKENS";

/// The user of [`MOUNTED`] whose requests reach the fixtures without a principal.
const ANONYMOUS: &str = "anonymous";

/// Tasks the load generator polls.
const LOAD_TASKS: usize = 1_000;

/// Concurrent keep-alive connections of the load generator.
const CONNECTIONS: usize = 32;

/// The measured period of a load run, after the warm-up ([`load::WARM_UP`]).
const MEASURED: Duration = Duration::from_secs(5);

/// Load runs, each on a fresh server.
const LOAD_RUNS: usize = 3;

/// Tasks parked for the memory measurement.
const PARKED_TASKS: usize = 10_000;

/// Connections (one thread each) that create the tasks.
const CREATORS: usize = 4;

/// Tasks created in one creation run, and the connections (one thread each) creating them.
const CREATION_TASKS: usize = 5_000;
const CREATION_CONNECTIONS: usize = 8;

/// Creation runs per worker count, each on a fresh server.
const CREATION_RUNS: usize = 3;

/// What the HTTP bench does at a scale.
#[derive(Clone, Debug)]
struct Plan {
    /// Tasks the load generator polls.
    load_tasks: usize,
    /// The load generator's keep-alive connections.
    connections: usize,
    /// The measured period of a load run.
    measured: Duration,
    /// Load runs, each on a fresh server.
    load_runs: usize,
    /// Tasks parked for the memory measurement.
    parked_tasks: usize,
    /// The worker counts the load and creation runs are made with: one, and one per core.
    workers: Vec<usize>,
    /// Tasks created in a creation run, and creation runs per worker count.
    creation_tasks: usize,
    creation_runs: usize,
    /// Whether the server is built in release; a smoke run takes the debug build that
    /// `cargo xtask clients` made, as it measures nothing worth a release build.
    release: bool,
}

impl Plan {
    fn of(scale: Scale) -> Plan {
        match scale {
            Scale::Full => Plan {
                load_tasks: LOAD_TASKS,
                connections: CONNECTIONS,
                measured: MEASURED,
                load_runs: LOAD_RUNS,
                parked_tasks: PARKED_TASKS,
                workers: worker_counts(),
                creation_tasks: CREATION_TASKS,
                creation_runs: CREATION_RUNS,
                release: true,
            },
            Scale::Smoke => Plan {
                load_tasks: 20,
                connections: 2,
                measured: Duration::from_millis(500),
                load_runs: 1,
                parked_tasks: 50,
                workers: worker_counts(),
                creation_tasks: 50,
                creation_runs: 1,
                release: false,
            },
        }
    }
}

/// One worker, and one per core of this machine if that is more.
fn worker_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    if cores > 1 { vec![1, cores] } else { vec![1] }
}

/// Builds the server; for each worker count runs the load [`LOAD_RUNS`] times and the
/// creation [`CREATION_RUNS`] times; runs the memory measurement once; and prints their table.
pub fn run(scale: Scale) -> Result<()> {
    let plan = Plan::of(scale);
    let profile = if plan.release {
        Profile::Release
    } else {
        Profile::Debug
    };
    let server = build_binary(SERVER, profile)?;
    let mounted = sibling_binary(&server, MOUNTED)?;
    let bearer = Bearer::new();
    let exe = std::env::current_exe()?;
    // Interleaved, so that a slow patch of this shared machine touches every worker count and
    // both endpoints alike: the ratios between them are what the runs are for.
    let counts = plan.workers.len();
    let mut loads = vec![Vec::with_capacity(plan.load_runs); counts];
    let mut mounted_loads = vec![Vec::with_capacity(plan.load_runs); counts];
    for _ in 0..plan.load_runs {
        for (i, &workers) in plan.workers.iter().enumerate() {
            loads[i].push(load_run(&exe, Served::Native(&server), &plan, workers)?);
            let served = Served::Mounted(&mounted, &bearer);
            mounted_loads[i].push(load_run(&exe, served, &plan, workers)?);
        }
    }
    let mut creations: Vec<Vec<CreationSample>> = (0..counts).map(|_| Vec::new()).collect();
    for _ in 0..plan.creation_runs {
        for (samples, &workers) in creations.iter_mut().zip(&plan.workers) {
            samples.push(creation_run(&server, &plan, workers)?);
        }
    }
    let mut by_workers = Vec::with_capacity(counts);
    let runs = plan.workers.iter().zip(&loads).zip(&mounted_loads);
    for (((&workers, loads), mounted_loads), creations) in runs.zip(&creations) {
        by_workers.push(WorkerFigures {
            workers,
            load: LoadSummary::of(loads)?,
            mounted: LoadSummary::of(mounted_loads)?,
            created: spread_of(creations.iter().map(|c| c.created).collect())?,
            parked: spread_of(creations.iter().map(|c| c.parked).collect())?,
        });
    }
    let floor = writer_floor::measure(plan.creation_tasks)?;
    let memory = memory_run(&server, plan.parked_tasks)?;
    table::print(&plan, &by_workers, &floor, &memory);
    Ok(())
}

/// Starts the server `binary` as the benches measure it: with `workers` worker threads (the
/// host's default when `None`), warnings only in its log, and `env` on top.
pub fn start_server(
    binary: &Path,
    workers: Option<usize>,
    env: &[(&str, &str)],
) -> Result<NativeServer> {
    let workers = workers.map(|workers| workers.to_string());
    // Ten thousand tasks: their events would drown the tables (and cost the host).
    let mut all = vec![("RUST_LOG", "warn")];
    all.extend(workers.as_deref().map(|workers| (WORKERS_VAR, workers)));
    all.extend_from_slice(env);
    NativeServer::start(binary, &all, None)
}

/// The binary `name` that cargo built next to `binary`, from the same package.
fn sibling_binary(binary: &Path, name: &str) -> Result<PathBuf> {
    let sibling = binary.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if sibling.is_file() {
        Ok(sibling)
    } else {
        Err(format!("cargo built {} but not {name} beside it", binary.display()).into())
    }
}

/// A bearer token made for one run of the bench, from the standard library's random hash
/// keys: what [`MOUNTED`]'s bearer check wants (16 characters or more). Never printed: its
/// `Debug` hides it.
struct Bearer(String);

impl Bearer {
    fn new() -> Bearer {
        let random = || RandomState::new().build_hasher().finish();
        Bearer(format!("bench{:016x}{:016x}", random(), random()))
    }

    /// The token.
    fn token(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Bearer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer(..)")
    }
}

/// The endpoint a load run measures: the native host's own listener, or the same fixtures
/// mounted in the `axum-app` example's service ([`MOUNTED`]), whose requests carry a bearer
/// token.
#[derive(Clone, Copy, Debug)]
enum Served<'a> {
    /// [`SERVER`], the binary.
    Native(&'a Path),
    /// [`MOUNTED`], the binary, and the token of its [`ANONYMOUS`] user.
    Mounted(&'a Path, &'a Bearer),
}

impl<'a> Served<'a> {
    /// Starts a fresh server with `workers` workers.
    fn start(self, workers: usize) -> Result<NativeServer> {
        match self {
            Served::Native(binary) => start_server(binary, Some(workers), &[]),
            Served::Mounted(binary, bearer) => {
                let tokens = format!("{ANONYMOUS}:{}", bearer.token());
                start_server(binary, Some(workers), &[(TOKENS_VAR, &tokens)])
            }
        }
    }

    /// The token every request must carry, if any.
    fn bearer(self) -> Option<&'a str> {
        match self {
            Served::Native(_) => None,
            Served::Mounted(_, bearer) => Some(bearer.token()),
        }
    }
}

/// The figures of one worker count.
struct WorkerFigures {
    workers: usize,
    /// `tasks/get` under load, on the native host's own listener.
    load: LoadSummary,
    /// The same on the endpoint mounted in the axum service.
    mounted: LoadSummary,
    /// Tasks created per second (until the last `tools/call` returned).
    created: Spread<f64>,
    /// Tasks created and parked per second (until the last one parked).
    parked: Spread<f64>,
}

fn spread_of(samples: Vec<f64>) -> Result<Spread<f64>> {
    Ok(Ranked::highest_first(samples)
        .spread()
        .ok_or("no creation run")?)
}

/// What one creation run measured, in tasks per second.
struct CreationSample {
    created: f64,
    parked: f64,
}

/// Creates the plan's creation tasks on a fresh server with `workers` workers over
/// [`CREATION_CONNECTIONS`] connections, and waits until each has parked in its sleep.
fn creation_run(binary: &Path, plan: &Plan, workers: usize) -> Result<CreationSample> {
    let server = start_server(binary, Some(workers), &[])?;
    let count = plan.creation_tasks;
    let started = Instant::now();
    create_tasks(&server, None, count, CREATION_CONNECTIONS)?;
    let created_in = started.elapsed();
    wait_parked(&server, count)?;
    let parked_in = started.elapsed();
    Ok(CreationSample {
        created: per_second(count as u64, created_in),
        parked: per_second(count as u64, parked_in),
    })
}

/// What one load run measured.
#[derive(Clone, Copy, Debug)]
struct LoadSample {
    /// Requests per second in the measured period.
    throughput: f64,
    /// The median latency.
    p50: Duration,
    /// The 99th percentile latency.
    p99: Duration,
    /// The server's CPU time per request, the warm-up included.
    server_cpu: Duration,
    /// The generator's CPU time per request.
    client_cpu: Duration,
    /// The server's peak RSS after the run.
    server_hwm_kib: u64,
}

/// One load run on a fresh server of `served` with the plan's parked tasks.
fn load_run(exe: &Path, served: Served<'_>, plan: &Plan, workers: usize) -> Result<LoadSample> {
    let server = served.start(workers)?;
    let bearer = served.bearer();
    let ids = create_tasks(&server, bearer, plan.load_tasks, CREATORS)?;
    wait_parked(&server, plan.load_tasks)?;
    let ids_file = server.state_dir().join("task-ids.txt");
    std::fs::write(&ids_file, ids.join("\n"))?;
    let mut generator = Command::new(exe);
    // The token goes in the environment, where no process listing shows it.
    match bearer {
        Some(token) => generator.env(BEARER_VAR, token),
        None => generator.env_remove(BEARER_VAR),
    };
    let cpu_before = cpu_time(server.pid())?;
    let output = generator
        .arg("bench-child")
        .arg("load")
        .arg(server.url())
        .arg(&ids_file)
        .arg(plan.connections.to_string())
        .arg(plan.measured.as_secs_f64().to_string())
        .stderr(Stdio::inherit())
        .output()?;
    let server_cpu = cpu_time(server.pid())? - cpu_before;
    if !output.status.success() {
        return Err(format!("the load generator failed ({})", output.status).into());
    }
    let stdout = String::from_utf8(output.stdout)?;
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix(RESULT_PREFIX))
        .ok_or("the load generator printed no result line")?;
    let field = |name: &str| -> Result<f64> {
        let value = line
            .split_whitespace()
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .ok_or_else(|| format!("no {name} in the result line {line:?}"))?;
        Ok(value.parse()?)
    };
    let errors = field("errors")?;
    if errors > 0.0 {
        return Err(format!("{errors} tasks/get requests failed under load").into());
    }
    let sent = field("sent")?.max(1.0);
    let micros = |us: f64| Duration::from_secs_f64(us / 1e6);
    Ok(LoadSample {
        throughput: field("req_per_s")?,
        p50: micros(field("p50_us")?),
        p99: micros(field("p99_us")?),
        server_cpu: server_cpu.div_f64(sent),
        client_cpu: Duration::from_secs_f64(field("cpu_s")? / sent),
        server_hwm_kib: status_kib(server.pid(), "VmHWM")?,
    })
}

/// What the memory measurement found.
#[derive(Clone, Copy, Debug)]
struct MemorySample {
    /// The server's RSS before any task was created.
    idle_rss_kib: u64,
    /// The server's peak RSS before any task was created.
    idle_hwm_kib: u64,
    /// The server's RSS once every task is parked.
    rss_kib: u64,
    /// The server's peak RSS then.
    hwm_kib: u64,
    /// From the first `tools/call` until the last returned.
    created_in: Duration,
    /// From the first `tools/call` until every task was parked.
    parked_in: Duration,
}

/// The memory of a fresh server with `parked_tasks` parked tasks.
fn memory_run(binary: &Path, parked_tasks: usize) -> Result<MemorySample> {
    let server = start_server(binary, None, &[])?;
    let idle_rss_kib = status_kib(server.pid(), "VmRSS")?;
    let idle_hwm_kib = status_kib(server.pid(), "VmHWM")?;
    let started = Instant::now();
    let ids = create_tasks(&server, None, parked_tasks, CREATORS)?;
    let created_in = started.elapsed();
    wait_parked(&server, parked_tasks)?;
    let parked_in = started.elapsed();
    let rss_kib = status_kib(server.pid(), "VmRSS")?;
    let hwm_kib = status_kib(server.pid(), "VmHWM")?;
    // After reading the figures, so that these requests do not count.
    check_working(&server, &ids, (parked_tasks / 100).max(1))?;
    Ok(MemorySample {
        idle_rss_kib,
        idle_hwm_kib,
        rss_kib,
        hwm_kib,
        created_in,
        parked_in,
    })
}

/// The load runs, summarised: best and median of each figure.
struct LoadSummary {
    /// Requests per second.
    throughput: Spread<f64>,
    /// Median latency.
    p50: Spread<Duration>,
    /// 99th percentile latency.
    p99: Spread<Duration>,
    /// The server's CPU time per request.
    server_cpu: Spread<Duration>,
    /// The generator's CPU time per request.
    client_cpu: Spread<Duration>,
    /// The highest peak RSS of the server in any run.
    server_hwm_kib: u64,
}

impl LoadSummary {
    /// Summarises `samples`; an error if there is none.
    fn of(samples: &[LoadSample]) -> Result<LoadSummary> {
        const NO_RUN: &str = "no load run";
        // Best is the lowest, except for throughput.
        let pick = |f: fn(&LoadSample) -> Duration| {
            Ranked::lowest_first(samples.iter().map(f).collect())
                .spread()
                .ok_or(NO_RUN)
        };
        let throughput = Ranked::highest_first(samples.iter().map(|s| s.throughput).collect());
        Ok(LoadSummary {
            throughput: throughput.spread().ok_or(NO_RUN)?,
            p50: pick(|s| s.p50)?,
            p99: pick(|s| s.p99)?,
            server_cpu: pick(|s| s.server_cpu)?,
            client_cpu: pick(|s| s.client_cpu)?,
            server_hwm_kib: samples.iter().map(|s| s.server_hwm_kib).max().unwrap_or(0),
        })
    }
}
