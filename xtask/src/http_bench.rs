//! The native host measured over HTTP, the second half of `cargo xtask bench`.
//!
//! Both measurements run the release build of `conformance-server` (built first, with
//! `cargo build --release -p conformance-server`) as a child process on `127.0.0.1`, port 0,
//! with a fresh state directory, and create their tasks through the MCP endpoint: `tools/call`
//! of `slow_compute`, declaring the Tasks extension, sleeping [`PARK_SECONDS`] (the longest the
//! fixture accepts; far longer than a run).
//!
//! - `tasks/get` under load: [`LOAD_TASKS`] parked tasks; once every one is parked,
//!   the load generator (this executable, re-invoked as `xtask bench-child load`, see the
//!   `load` module) polls them over [`CONNECTIONS`] keep-alive connections for a warm-up
//!   second and [`MEASURED`]. It reports throughput and p50/p99 latency; every response must
//!   be a `working` task, and one error fails the command. [`LOAD_RUNS`] runs, each on a fresh
//!   server: best and median. The server's and the generator's CPU time per request are shown
//!   too, to tell which side ran out of CPU.
//! - Memory: [`PARKED_TASKS`] parked tasks; once every one is parked, the server's `VmRSS` and
//!   `VmHWM` (from `/proc/<pid>/status`).
//!
//! A smoke run ([`Scale::Smoke`]) does both with a few tasks, two connections and one short
//! load run, on the debug build `cargo xtask clients` made.
//!
//! A task is parked when the store says so (read-only, from the server's SQLite file): status
//! `working`, no activation due or running (`next_run_at` unset), a pending sleep step.
//! Targets are shown next to the figures, never enforced.

use std::error::Error;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use durable_mcp::TaskStatus;
use durable_mcp::native::{DATABASE_FILE, WORKERS_VAR};
use durable_mcp::store::{StepKind, StepStatus};
use durable_mcp_tests::http::Connection;
use durable_mcp_tests::mcp::McpClient;
use rusqlite::OpenFlags;
use serde_json::{Value, json};

use crate::bench::{Scale, verdict};
use crate::load::{self, RESULT_PREFIX, endpoint};
use crate::stats::{Ranked, Spread, mib, micros, millis, per_second, print_row, ratio, thousands};
use crate::writer_floor::WriterFloor;

/// A result whose error is any error.
type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

/// The package and binary of the server measured.
const SERVER: &str = "conformance-server";

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

/// How long each task sleeps, in seconds: `slow_compute` refuses more than 3,000 (50 minutes),
/// and a run parks its tasks for a few minutes at most.
const PARK_SECONDS: u64 = 3_000;

/// Connections (one thread each) that create the tasks.
const CREATORS: usize = 4;

/// Tasks created in one creation run, and the connections (one thread each) creating them.
const CREATION_TASKS: usize = 5_000;
const CREATION_CONNECTIONS: usize = 8;

/// Creation runs per worker count, each on a fresh server.
const CREATION_RUNS: usize = 3;

/// Creation is said to be bound by the SQLite writer when the workers store tasks at this
/// share of the writer's floor or more.
const WRITER_BINDS: f64 = 0.7;

/// With two workers, `tasks/get` throughput should be at least this many times one worker's.
const TARGET_SCALING: f64 = 1.6;

/// How long every created task should take to park, at most.
const PARK_LIMIT: Duration = Duration::from_secs(300);

/// `tasks/get` throughput should be at least this, per second.
const TARGET_THROUGHPUT: f64 = 10_000.0;

/// The p99 latency of `tasks/get` should be under this.
const TARGET_P99: Duration = Duration::from_millis(5);

/// The host's resident memory with [`PARKED_TASKS`] parked tasks should be under this, in MiB.
const TARGET_RSS_MIB: u64 = 100;

/// Clock ticks per second of `utime` and `stime` in `/proc/<pid>/stat` (`USER_HZ`, 100 on
/// every Linux architecture).
const USER_HZ: u64 = 100;

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

/// `cargo xtask bench`, second half: builds the server; for each worker count runs the load
/// [`LOAD_RUNS`] times and the creation [`CREATION_RUNS`] times; runs the memory measurement
/// once; and prints their table. `exe` is this executable.
pub fn run(exe: &Path, scale: Scale) -> Result<()> {
    let plan = Plan::of(scale);
    let server = if plan.release {
        build_server(exe)?
    } else {
        crate::clients::build_binary(&crate::clients::workspace_root(), SERVER)?
    };
    // Interleaved, so that a slow patch of this shared machine touches every worker count
    // alike: the ratios between them are what the runs are for.
    let counts = plan.workers.len();
    let mut loads = vec![Vec::with_capacity(plan.load_runs); counts];
    for _ in 0..plan.load_runs {
        for (samples, &workers) in loads.iter_mut().zip(&plan.workers) {
            samples.push(load_run(exe, &server, &plan, workers)?);
        }
    }
    let mut creations: Vec<Vec<CreationSample>> = (0..counts).map(|_| Vec::new()).collect();
    for _ in 0..plan.creation_runs {
        for (samples, &workers) in creations.iter_mut().zip(&plan.workers) {
            samples.push(creation_run(&server, &plan, workers)?);
        }
    }
    let mut by_workers = Vec::with_capacity(counts);
    for ((&workers, loads), creations) in plan.workers.iter().zip(&loads).zip(&creations) {
        by_workers.push(WorkerFigures {
            workers,
            load: LoadSummary::of(loads)?,
            created: spread_of(creations.iter().map(|c| c.created).collect())?,
            parked: spread_of(creations.iter().map(|c| c.parked).collect())?,
        });
    }
    let floor = crate::writer_floor::measure(plan.creation_tasks)?;
    let memory = memory_run(&server, plan.parked_tasks)?;
    print_table(&plan, &by_workers, &floor, &memory);
    Ok(())
}

/// The figures of one worker count.
struct WorkerFigures {
    workers: usize,
    load: LoadSummary,
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
    let server = Server::start(binary, Some(workers))?;
    let count = plan.creation_tasks;
    let started = Instant::now();
    create_tasks(&server, count, CREATION_CONNECTIONS)?;
    let created_in = started.elapsed();
    wait_parked(&server, count)?;
    let parked_in = started.elapsed();
    Ok(CreationSample {
        created: per_second(count as u64, created_in),
        parked: per_second(count as u64, parked_in),
    })
}

/// Builds the server in release and returns its path, next to this executable (which cargo
/// built into the same `target/release`).
pub(crate) fn build_server(exe: &Path) -> Result<PathBuf> {
    eprintln!("bench: building {SERVER} (release)");
    // Inside `cargo xtask`, CARGO names the cargo that runs us: use the same toolchain.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "--package", SERVER])
        .status()?;
    if !status.success() {
        return Err(format!("building {SERVER} failed ({status})").into());
    }
    let binary = exe
        .parent()
        .ok_or("this executable has no directory")?
        .join(format!("{SERVER}{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        return Err(format!("{} is missing after the build", binary.display()).into());
    }
    Ok(binary)
}

/// The server, running as a child process with its state in a temporary directory; killed
/// when dropped.
pub(crate) struct Server {
    /// The server process.
    child: Child,
    /// The MCP endpoint's URL, as the server printed it.
    pub(crate) url: String,
    /// The endpoint's socket address.
    address: SocketAddr,
    /// The endpoint's path.
    path: String,
    /// The state directory, removed when dropped (after the process is killed).
    dir: tempfile::TempDir,
}

impl Server {
    /// Starts `binary` on a free port with a fresh state directory, with `workers` worker
    /// threads (the host's default when `None`), and waits until it prints the URL it serves.
    fn start(binary: &Path, workers: Option<usize>) -> Result<Server> {
        Server::start_with(binary, workers, &[])
    }

    /// [`start`](Self::start) with the environment variables `env` set as well.
    pub(crate) fn start_with(
        binary: &Path,
        workers: Option<usize>,
        env: &[(&str, &str)],
    ) -> Result<Server> {
        let dir = tempfile::tempdir()?;
        let mut command = Command::new(binary);
        if let Some(workers) = workers {
            command.env(WORKERS_VAR, workers.to_string());
        }
        let mut child = command
            .env("PORT", "0")
            .env("DURABLE_MCP_DATA", dir.path())
            // Ten thousand tasks: their events would drown the tables (and cost the host).
            .env("RUST_LOG", "warn")
            // Given last, so that `env` may set `PORT` too.
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no piped stdout")?;
        let (sender, receiver) = mpsc::channel();
        // Reads every line, so that the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                    let _ = sender.send(url.to_owned());
                }
            }
        });
        let url = match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{SERVER} printed no URL within 60 s").into());
            }
        };
        let (address, path) = endpoint(&url)?;
        Ok(Server {
            child,
            url,
            address,
            path,
            dir,
        })
    }

    /// The server's process id.
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's SQLite file.
    fn database(&self) -> PathBuf {
        self.dir.path().join(DATABASE_FILE)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Creates `count` `slow_compute` tasks that sleep [`PARK_SECONDS`], over `connections`
/// keep-alive connections (one thread each), and returns their ids.
fn create_tasks(server: &Server, count: usize, connections: usize) -> Result<Vec<String>> {
    let threads: Vec<_> = (0..connections)
        .map(|creator| {
            let share = count / connections + usize::from(creator < count % connections);
            let (url, address, path) = (server.url.clone(), server.address, server.path.clone());
            std::thread::spawn(move || -> Result<Vec<String>, String> {
                let client = McpClient::new(&url);
                let mut connection = Connection::open(address).map_err(|e| e.to_string())?;
                (0..share)
                    .map(|_| create_task(&client, &mut connection, &path))
                    .collect()
            })
        })
        .collect();
    let mut ids = Vec::with_capacity(count);
    for thread in threads {
        ids.extend(thread.join().map_err(|_| "a creating thread panicked")??);
    }
    Ok(ids)
}

/// Creates one task on `connection` and returns its id.
fn create_task(
    client: &McpClient,
    connection: &mut Connection,
    path: &str,
) -> Result<String, String> {
    let arguments = json!({ "seconds": PARK_SECONDS, "label": "bench" });
    let params = json!({ "name": "slow_compute", "arguments": arguments });
    let (body, headers) = client.build("tools/call", params, true);
    let headers = durable_mcp_tests::http::borrowed(&headers);
    let response = connection
        .request("POST", path, &headers, body.to_string().as_bytes())
        .map_err(|e| format!("tools/call failed: {e}"))?;
    let answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    match answer["result"]["taskId"].as_str() {
        Some(id) if response.status == 200 && answer["result"]["resultType"] == "task" => {
            Ok(id.to_owned())
        }
        _ => Err(format!(
            "tools/call created no task: HTTP {} {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        )),
    }
}

/// Waits until the store holds `count` parked tasks, reading the server's SQLite file.
fn wait_parked(server: &Server, count: usize) -> Result<()> {
    let connection =
        rusqlite::Connection::open_with_flags(server.database(), OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    connection.busy_timeout(Duration::from_secs(5))?;
    let mut parked = connection.prepare(
        "SELECT count(*) FROM task WHERE status = ?1 AND next_run_at IS NULL AND EXISTS \
         (SELECT 1 FROM steps WHERE steps.task_id = task.task_id AND kind = ?2 AND status = ?3)",
    )?;
    let deadline = Instant::now() + PARK_LIMIT;
    loop {
        let now: usize = parked.query_row(
            [
                TaskStatus::Working.as_str(),
                StepKind::Sleep.as_str(),
                StepStatus::Pending.as_str(),
            ],
            |row| row.get(0),
        )?;
        if now == count {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{now} of {count} tasks parked after {} s",
                PARK_LIMIT.as_secs()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks over HTTP that every `step`-th task of `ids` is `working`.
fn check_working(server: &Server, ids: &[String], step: usize) -> Result<()> {
    let client = McpClient::new(&server.url);
    let mut connection = Connection::open(server.address)?;
    for id in ids.iter().step_by(step) {
        let (body, headers) = client.build("tasks/get", json!({ "taskId": id }), true);
        let headers = durable_mcp_tests::http::borrowed(&headers);
        let response =
            connection.request("POST", &server.path, &headers, body.to_string().as_bytes())?;
        let answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        if response.status != 200 || answer["result"]["status"] != "working" {
            return Err(format!(
                "task {id} is not working: HTTP {} {answer}",
                response.status
            )
            .into());
        }
    }
    Ok(())
}

/// A field of `/proc/<pid>/status` given in kB (`VmRSS`, `VmHWM`), in KiB.
fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))?;
    Ok(kib.trim().parse()?)
}

/// The CPU time (user and system, every thread) process `pid` has used, from
/// `/proc/<pid>/stat`, to the clock tick.
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name, in parentheses, may hold spaces: count fields after it. The state is
    // field 3 of the file, so utime (14) and stime (15) are the 12th and 13th after it.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .ok_or("a /proc stat line without a command name")?
        .1
        .split_whitespace()
        .collect();
    let ticks = |index: usize| -> Result<u64> {
        Ok(fields
            .get(index)
            .ok_or("a short /proc stat line")?
            .parse()?)
    };
    let ticks = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(ticks * 1000 / USER_HZ))
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

/// One load run on a fresh server with the plan's parked tasks.
fn load_run(exe: &Path, binary: &Path, plan: &Plan, workers: usize) -> Result<LoadSample> {
    let server = Server::start(binary, Some(workers))?;
    let ids = create_tasks(&server, plan.load_tasks, CREATORS)?;
    wait_parked(&server, plan.load_tasks)?;
    let ids_file = server.dir.path().join("task-ids.txt");
    std::fs::write(&ids_file, ids.join("\n"))?;
    let cpu_before = cpu_time(server.pid())?;
    let output = Command::new(exe)
        .arg("bench-child")
        .arg("load")
        .arg(&server.url)
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
    let server = Server::start(binary, None)?;
    let idle_rss_kib = status_kib(server.pid(), "VmRSS")?;
    let idle_hwm_kib = status_kib(server.pid(), "VmHWM")?;
    let started = Instant::now();
    let ids = create_tasks(&server, parked_tasks, CREATORS)?;
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

/// Prints the load, creation and memory figures with their targets.
fn print_table(
    plan: &Plan,
    by_workers: &[WorkerFigures],
    floor: &WriterFloor,
    memory: &MemorySample,
) {
    let parked_tasks = plan.parked_tasks;
    println!();
    println!(
        "durable-mcp bench, native host over HTTP: {} {SERVER} on 127.0.0.1, state in {} \
         (set TMPDIR to move it)",
        if plan.release { "release" } else { "debug" },
        std::env::temp_dir().display()
    );
    println!(
        "tasks/get: {} keep-alive connections from another process, round robin over {} working \
         tasks, {} s warm-up then {} s measured; {} runs per worker count, each on a fresh \
         server: best and median",
        plan.connections,
        thousands(plan.load_tasks as u64),
        load::WARM_UP.as_secs(),
        plan.measured.as_secs_f64(),
        plan.load_runs
    );
    println!();
    print_row("measurement", "best", "median", "peak RSS", "target");
    for figures in by_workers {
        print_load_rows(figures);
    }
    print_creation_rows(plan, by_workers, floor);
    println!();
    let target = TARGET_RSS_MIB * 1024;
    print_row("host memory", "VmRSS", "VmHWM", "", "target");
    print_row(
        "idle, no task yet",
        &mib(memory.idle_rss_kib),
        &mib(memory.idle_hwm_kib),
        "",
        "",
    );
    print_row(
        &format!("{} tasks parked in a sleep", thousands(parked_tasks as u64)),
        &mib(memory.rss_kib),
        &mib(memory.hwm_kib),
        "",
        &format!(
            "under {TARGET_RSS_MIB} MiB: {}",
            verdict(memory.rss_kib < target && memory.hwm_kib < target)
        ),
    );
    println!();
    println!(
        "tasks/get: throughput counts the requests sent in the measured period; latency is from \
         writing a request to reading its whole response; peak RSS is the server's highest \
         VmHWM of the runs"
    );
    println!(
        "CPU per tasks/get: the server's and the generator's CPU time over the whole run, \
         warm-up included, divided by the requests sent; both share this machine's {} cores, \
         so the ceiling is the cores over the two together (with one worker): no server \
         could scale past it here",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "memory: {} tasks created through the endpoint in {:.1} s ({} connections), all parked \
         {:.1} s after the first; VmHWM includes that burst; targets are judged on the median \
         (load) and on both VmRSS and VmHWM (memory)",
        thousands(parked_tasks as u64),
        memory.created_in.as_secs_f64(),
        CREATORS,
        memory.parked_in.as_secs_f64()
    );
}

/// ", 1 worker", ", 2 workers".
fn with_workers(workers: usize) -> String {
    format!(", {workers} worker{}", if workers == 1 { "" } else { "s" })
}

/// The `tasks/get` rows of one worker count.
fn print_load_rows(figures: &WorkerFigures) {
    let (load, with) = (&figures.load, with_workers(figures.workers));
    let Spread { best, median } = load.throughput;
    print_row(
        &format!("tasks/get throughput{with}"),
        &format!("{}/s", thousands(best as u64)),
        &format!("{}/s", thousands(median as u64)),
        &mib(load.server_hwm_kib),
        &format!(
            "at least {}/s: {}",
            thousands(TARGET_THROUGHPUT as u64),
            verdict(median >= TARGET_THROUGHPUT)
        ),
    );
    print_row(
        &format!("tasks/get p50{with}"),
        &millis(load.p50.best),
        &millis(load.p50.median),
        "",
        "",
    );
    print_row(
        &format!("tasks/get p99{with}"),
        &millis(load.p99.best),
        &millis(load.p99.median),
        "",
        &format!(
            "under {} ms: {}",
            TARGET_P99.as_millis(),
            verdict(load.p99.median < TARGET_P99)
        ),
    );
    print_row(
        &format!("server CPU/tasks/get{with}"),
        &micros(load.server_cpu.best),
        &micros(load.server_cpu.median),
        "",
        "",
    );
    print_row(
        &format!("generator CPU/tasks/get{with}"),
        &micros(load.client_cpu.best),
        &micros(load.client_cpu.median),
        "",
        "",
    );
}

/// The creation rows of every worker count, and how the most workers compare with one.
fn print_creation_rows(plan: &Plan, by_workers: &[WorkerFigures], floor: &WriterFloor) {
    println!();
    println!(
        "creation: {} slow_compute tasks over {CREATION_CONNECTIONS} connections, each run on \
         a fresh server until every task has parked in its sleep (a claim, a step and a \
         settlement written per task besides its row); {} runs per worker count",
        thousands(plan.creation_tasks as u64),
        plan.creation_runs
    );
    print_row("measurement", "best", "median", "", "");
    for figures in by_workers {
        let with = with_workers(figures.workers);
        let rate = |spread: Spread<f64>| {
            (
                format!("{}/s", thousands(spread.best as u64)),
                format!("{}/s", thousands(spread.median as u64)),
            )
        };
        let (best, median) = rate(figures.created);
        print_row(&format!("created{with}"), &best, &median, "", "");
        let (best, median) = rate(figures.parked);
        print_row(&format!("created and parked{with}"), &best, &median, "", "");
    }
    print_row(
        "SQLite writer alone (floor)",
        &format!("{}/s", thousands(floor.tasks_per_second as u64)),
        "",
        "",
        &format!(
            "{} write transactions a task, on one connection",
            floor.writes_per_task
        ),
    );
    let (Some(one), Some(most)) = (by_workers.first(), by_workers.last()) else {
        return;
    };
    if most.workers == one.workers {
        return;
    }
    let scaled = |f: fn(&WorkerFigures) -> f64| ratio(f(most), f(one));
    let polls = scaled(|f| f.load.throughput.median);
    println!();
    print_row(
        &format!("tasks/get, {} workers / 1", most.workers),
        &format!("{polls:.2}x"),
        "",
        "",
        &format!(
            "at least {TARGET_SCALING:.1}x: {}",
            verdict(polls >= TARGET_SCALING)
        ),
    );
    // The load generator shares the cores: with every core busy, the most the pair can do is
    // the cores over the CPU both spend per request (measured with one worker).
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let per_request = one.load.server_cpu.median + one.load.client_cpu.median;
    let ceiling = cores as f64 / per_request.as_secs_f64().max(1e-9);
    print_row(
        &format!("  ceiling on {cores} shared cores"),
        &format!("{:.2}x", ceiling / one.load.throughput.median.max(1e-9)),
        &format!("{}/s", thousands(ceiling as u64)),
        "",
        "",
    );
    print_row(
        &format!("creation and park, {} workers / 1", most.workers),
        &format!("{:.2}x", scaled(|f| f.parked.median)),
        "",
        "",
        "",
    );
    // The writer binds when the workers together store tasks about as fast as it can alone.
    let share = most.parked.median / floor.tasks_per_second.max(1e-9);
    print_row(
        &format!("  {} workers / writer floor", most.workers),
        &format!("{:.0}%", share * 100.0),
        "",
        "",
        if share >= WRITER_BINDS {
            "the SQLite writer is the limit"
        } else {
            "CPU is the limit, not the SQLite writer"
        },
    );
}
