//! `cargo xtask bench`, third part: the Cloudflare host under workerd (`wrangler dev`, wrangler
//! 4.86.0), measured in one run against floors measured in the same run.
//!
//! The bench Worker (`xtask/bench-worker`) serves the conformance fixtures through durable-mcp
//! beside `Floor`, a bare Durable Object. Beside it runs the **JavaScript floor**
//! (`xtask/bench-floor-js`, plain JS served without a build), what the TypeScript reference
//! stands on: a JS Worker calling a JS SQLite Durable Object (`extends DurableObject`) through
//! RPC, `ping()` that returns at once and `insert(body)` that inserts one 120-byte row. From
//! one keep-alive connection to each Worker, in order:
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
//!   (at least [`TARGET_THROUGHPUT_RATIO`]).
//!
//! Each latency is sampled [`SAMPLES`] times, interleaved with the floors (p50, p90, p99); each
//! per-step figure is the median of [`STEP_RUNS`] runs, after one unmeasured run. Then the
//! wasm size of `examples/report-task` (the Worker the root `wrangler.toml` deploys), raw and
//! gzipped, built as deployed: with wasm-opt (`cargo xtask size` says where its bytes go).
//! Targets are printed next to the figures, never enforced.
//!
//! A smoke run ([`Scale::Smoke`]) takes a few samples, requests and steps of each, and the
//! report-task build the Worker tests make (no wasm-opt; `cargo xtask size --smoke` runs that).

use std::error::Error;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use durable_mcp_tests::http::Connection;
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::{
    WorkerProcess, build_worker, build_worker_optimized, workspace_root,
};
use serde_json::{Value, json};

use crate::bench::{Scale, verdict};
use crate::stats::{Ranked, median, micros, millis, per_second, ratio, thousands};
use crate::workerd_cpu::Runtime;

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

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
const JS_FLOOR: &str = "xtask/bench-floor-js";
/// Concurrent clients of the throughput measurement, each on its own keep-alive connection.
const CLIENTS: usize = 16;
/// Rounds of the throughput measurement; each drives every request kind once, in turn.
const ROUNDS: usize = 2;
/// How long each request kind is driven per round.
const ROUND: Duration = Duration::from_secs(5);

/// `tasks/get` p50 may exceed the floor's by this fraction.
const TARGET_GET_OVERHEAD: f64 = 0.05;
/// Task creation p50 may be this many times the floor's.
const TARGET_CREATE_RATIO: f64 = 1.5;
/// A step may cost this many times a bare insert...
const TARGET_STEP_RATIO: f64 = 2.0;
/// ...and no more than this.
const TARGET_STEP: Duration = Duration::from_micros(50);
/// The slowest `tasks/get` during a long run.
const TARGET_RESPONSIVE: Duration = Duration::from_millis(50);
/// The deployed Worker's gzipped wasm.
const TARGET_GZIP_BYTES: u64 = 400 * 1000;
/// `tasks/get` throughput under [`CLIENTS`] clients, at least this fraction of the JS floor's
/// RPC insert.
const TARGET_THROUGHPUT_RATIO: f64 = 0.9;

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
            },
        }
    }
}

/// Builds the bench Worker and report-task, starts them and the JS floor, runs every
/// measurement, prints the tables.
pub fn run(scale: Scale) -> Result<()> {
    scale.announce("bench worker");
    let plan = Plan::of(scale);
    let root = workspace_root();
    if plan.optimized {
        crate::worker_tools::ensure_wasm_opt()?;
    } else {
        crate::worker_tools::ensure()?;
    }
    eprintln!("bench: building the bench Worker and examples/report-task (worker-build)");
    let worker = crate::worker_target::start(&root, "xtask/bench-worker")?;
    build(&root.join("examples/report-task"), plan.optimized)?;
    eprintln!("bench: starting the JavaScript floor ({JS_FLOOR}, no build)");
    let js_floor = crate::worker_target::start_js(&root, JS_FLOOR)?;
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
    print_latencies(&plan, &latencies);
    print_cpu(&plan, cpu.as_ref());
    print_throughput(&plan, &throughput);
    print_others(&plan, step, insert, slowest, (raw, gzipped));
    Ok(())
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

/// A keep-alive connection to the bench Worker and the MCP request shapes, and one to the
/// JavaScript floor.
struct Bench {
    connection: Connection,
    client: McpClient,
    js: Connection,
    js_address: SocketAddr,
    plan: Plan,
}

impl Bench {
    fn new(worker: &WorkerProcess, js_floor: &WorkerProcess, plan: Plan) -> Result<Bench> {
        let client = McpClient::new(&worker.mcp_url());
        let connection = Connection::open(client.address())?;
        let js_address = js_floor
            .url()
            .strip_prefix("http://")
            .ok_or("the JS floor's URL is not http://")?
            .parse()?;
        let js = Connection::open(js_address)?;
        Ok(Bench {
            connection,
            client,
            js,
            js_address,
            plan,
        })
    }

    /// One MCP request on the kept connection; its `result`.
    fn mcp(&mut self, method: &str, params: Value) -> Result<Value> {
        let (body, headers) = self.client.build(method, params, true);
        let headers = durable_mcp_tests::http::borrowed(&headers);
        let response = self
            .connection
            .request("POST", "/mcp", &headers, body.to_string().as_bytes())
            .map_err(|error| format!("{method}: {error}"))?;
        let answer = response.json();
        answer
            .get("result")
            .cloned()
            .ok_or_else(|| format!("{method} answered {answer}").into())
    }

    fn floor(&mut self, path: &str, method: &str) -> Result<()> {
        self.floor_with(path, method, b"")
    }

    fn floor_with(&mut self, path: &str, method: &str, body: &[u8]) -> Result<()> {
        expect_ok(&mut self.connection, method, path, body)
    }

    fn create(&mut self, count: u64) -> Result<String> {
        let created = self.mcp(
            "tools/call",
            json!({ "name": "many_steps", "arguments": { "count": count } }),
        )?;
        created["taskId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no task: {created}").into())
    }

    fn get(&mut self, id: &str) -> Result<Value> {
        self.mcp("tasks/get", json!({ "taskId": id }))
    }

    /// Creates a `many_steps` task, waits until it is completed, and returns the time from its
    /// creation to its completion as the object's clock recorded them (`createdAt` and
    /// `lastUpdatedAt`, in milliseconds): polling from here neither adds to it nor slows it much.
    fn run_to_completion(&mut self, count: u64) -> Result<Duration> {
        let id = self.create(count)?;
        self.wait_completed(&id)
    }

    /// Waits until the task `id` is completed; see [`run_to_completion`](Self::run_to_completion).
    fn wait_completed(&mut self, id: &str) -> Result<Duration> {
        loop {
            let task = self.get(id)?;
            match task["status"].as_str() {
                Some("completed") => {
                    let at = |field: &str| {
                        task[field]
                            .as_str()
                            .and_then(epoch_millis)
                            .ok_or_else(|| format!("no {field} in {task}"))
                    };
                    let millis = at("lastUpdatedAt")?.saturating_sub(at("createdAt")?);
                    return Ok(Duration::from_millis(millis));
                }
                Some("working") => std::thread::sleep(Duration::from_millis(20)),
                _ => return Err(format!("many_steps ended otherwise: {task}").into()),
            }
        }
    }

    /// The latencies, interleaved so that a slow patch of the machine touches each alike.
    fn latencies(&mut self) -> Result<Latencies> {
        let id = self.create(0)?;
        self.run_to_completion(0)?;
        // What the Worker sends the object for a tasks/get, echoed by a bare object.
        let call = json!({ "op": "get", "task_id": id, "caller": null }).to_string();
        // A client's tasks/get, read by the Worker around a bare round trip and answered back
        // (about the size of the answer).
        let get_body = self
            .client
            .build("tasks/get", json!({ "taskId": id }), true)
            .0
            .to_string();
        // The JS floor's objects exist before they are timed, as the task's object does.
        for n in 0..8 {
            js_call(&mut self.js, JsCall::Ping, &format!("js-{n}"))?;
        }
        let mut samples: [Vec<Duration>; 13] = Default::default();
        for i in 0..self.plan.samples {
            let timed = |bench: &mut Bench, probe: usize| -> Result<Duration> {
                let started = Instant::now();
                match probe {
                    0 => bench.floor(&format!("/floor/ping/floor-{}", i % 8), "GET")?,
                    1 => drop(bench.mcp("server/discover", json!({}))?),
                    2 => drop(bench.get(&id)?),
                    3 => drop(bench.create(0)?),
                    4 => bench.floor(&format!("/floor/ping/fresh-{i}"), "GET")?,
                    5 => bench.floor_with(
                        &format!("/floor/echo/floor-{}", i % 8),
                        "POST",
                        call.as_bytes(),
                    )?,
                    6 => bench.floor_with(
                        &format!("/floor/read/floor-{}", i % 8),
                        "POST",
                        get_body.as_bytes(),
                    )?,
                    7 => bench.floor(&format!("/floor/insert/created-{i}?n=1&alarm=1"), "POST")?,
                    8 => js_call(&mut bench.js, JsCall::Ping, &format!("js-{}", i % 8))?,
                    9 => js_call(&mut bench.js, JsCall::Insert, &format!("js-{}", i % 8))?,
                    10 => bench.floor("/floor/none", "GET")?,
                    11 => bench.floor(&format!("/floor/rpc-ping/floor-{}", i % 8), "GET")?,
                    _ => bench.floor(&format!("/floor/rpc-sql/floor-{}", i % 8), "GET")?,
                }
                Ok(started.elapsed())
            };
            for (probe, sample) in samples.iter_mut().enumerate() {
                sample.push(timed(self, probe)?);
            }
        }
        let [
            floor,
            worker,
            get,
            create,
            fresh,
            echo,
            read,
            fresh_insert,
            js_ping,
            js_insert,
            none,
            rpc_ping,
            rpc_sql,
        ] = samples.map(Latency::of);
        Ok(Latencies {
            floor,
            worker,
            get,
            create,
            fresh,
            echo,
            read,
            fresh_insert,
            js_ping,
            js_insert,
            none,
            rpc_ping,
            rpc_sql,
        })
    }

    /// What a request of each [`CPU_PROBES`] kind costs the workerd process that runs its
    /// Worker, in CPU time: [`CPU_ROUNDS`] rounds of [`CPU_REQUESTS`] sequential requests of
    /// each kind in turn, summed. `None` for a kind whose process could not be read.
    fn cpu_per_request(&mut self, rust: &Runtime, js: &Runtime) -> Result<CpuCosts> {
        let id = self.create(0)?;
        self.wait_completed(&id)?;
        let mut totals = [Some(Duration::ZERO); CPU_PROBES.len()];
        for _ in 0..self.plan.cpu_rounds {
            for ((probe, _), total) in CPU_PROBES.iter().zip(&mut totals) {
                let runtime = match probe {
                    CpuProbe::JsInsert | CpuProbe::JsPing => js,
                    _ => rust,
                };
                let before = runtime.cpu();
                for _ in 0..self.plan.cpu_requests {
                    match probe {
                        CpuProbe::Get => drop(self.get(&id)?),
                        CpuProbe::JsInsert => js_call(&mut self.js, JsCall::Insert, "cpu")?,
                        CpuProbe::JsPing => js_call(&mut self.js, JsCall::Ping, "cpu")?,
                        CpuProbe::None => self.floor("/floor/none", "GET")?,
                        CpuProbe::RpcPing => self.floor("/floor/rpc-ping/cpu", "GET")?,
                    }
                }
                let used = before
                    .zip(runtime.cpu())
                    .map(|(from, to)| to.saturating_sub(from));
                *total = total.zip(used).map(|(sum, used)| sum + used);
            }
        }
        let requests = u32::try_from(self.plan.cpu_rounds)? * self.plan.cpu_requests;
        Ok(CpuCosts(
            totals.map(|total| total.map(|total| total / requests)),
        ))
    }

    /// Requests per second under [`CLIENTS`] concurrent clients: `tasks/get` of one completed
    /// task, the JS floor's RPC insert and its RPC ping (each into one object), in turn for
    /// [`ROUNDS`] rounds of [`ROUND`] each, so that a slow patch of the machine touches each
    /// alike.
    fn throughput(&mut self) -> Result<Throughput> {
        let id = self.create(0)?;
        self.wait_completed(&id)?;
        let (body, headers) = self
            .client
            .build("tasks/get", json!({ "taskId": id }), true);
        let body = body.to_string();
        let headers = durable_mcp_tests::http::borrowed(&headers);
        let get = |connection: &mut Connection| -> Result<()> {
            let response = connection
                .request("POST", "/mcp", &headers, body.as_bytes())
                .map_err(|error| format!("tasks/get: {error}"))?;
            let answer: Value = serde_json::from_slice(&response.body)?;
            if answer["result"]["status"] != "completed" {
                return Err(format!("tasks/get answered {answer}").into());
            }
            Ok(())
        };
        let insert = |connection: &mut Connection| js_call(connection, JsCall::Insert, "clients");
        let ping = |connection: &mut Connection| js_call(connection, JsCall::Ping, "clients");
        let (rust, js) = (self.client.address(), self.js_address);
        let kinds: [(SocketAddr, &Request<'_>); 3] = [(rust, &get), (js, &insert), (js, &ping)];
        let mut totals = [(0, Duration::ZERO); 3];
        for _ in 0..self.plan.rounds {
            for ((address, request), total) in kinds.iter().zip(&mut totals) {
                let (done, took) = drive(*address, *request, &self.plan)?;
                total.0 += done;
                total.1 += took;
            }
        }
        // wrangler dev closes a keep-alive connection left idle for about 5 s, as the kept ones
        // were while the clients ran: open them again.
        self.connection = Connection::open(rust)?;
        self.js = Connection::open(js)?;
        let [get, js_insert, js_ping] = totals.map(|(done, took)| Rate { done, took });
        Ok(Throughput {
            get,
            js_insert,
            js_ping,
        })
    }

    /// The cost of one no-op step, and of one bare insert in an object.
    fn per_step(&mut self) -> Result<(Duration, Duration)> {
        let Plan {
            steps: count,
            inserts,
            step_runs,
            ..
        } = self.plan;
        // One unmeasured run of each first: the first runs of a code path can be slower (V8
        // optimises hot wasm in the background, later on a busy machine); the figure is the
        // steady cost.
        self.run_to_completion(count)?;
        self.floor(
            &format!("/floor/insert/inserts-warm-up?n={inserts}"),
            "POST",
        )?;
        let (mut steps, mut per_insert) = (Vec::new(), Vec::new());
        for run in 0..step_runs {
            let none = self.run_to_completion(0)?;
            let many = self.run_to_completion(count)?;
            steps.push(many.saturating_sub(none) / u32::try_from(count)?);
            let object = format!("inserts-{run}");
            let started = Instant::now();
            self.floor(&format!("/floor/insert/{object}?n=0"), "POST")?;
            let none = started.elapsed();
            let started = Instant::now();
            self.floor(&format!("/floor/insert/{object}?n={inserts}"), "POST")?;
            per_insert.push(started.elapsed().saturating_sub(none) / u32::try_from(inserts)?);
        }
        let no_run = "no per-step run";
        Ok((
            median(steps).ok_or(no_run)?,
            median(per_insert).ok_or(no_run)?,
        ))
    }

    /// The slowest `tasks/get` answered while a task runs [`LONG_RUN`] steps; `None` if none
    /// was answered before the run ended (the run held every request).
    fn slowest_get_during_long_run(&mut self) -> Result<Option<Duration>> {
        let id = self.create(self.plan.long_run)?;
        let mut slowest = Duration::ZERO;
        let mut answered_while_working = 0;
        loop {
            let started = Instant::now();
            let task = self.get(&id)?;
            let took = started.elapsed();
            match task["status"].as_str() {
                Some("working") => {
                    slowest = slowest.max(took);
                    answered_while_working += 1;
                }
                Some("completed") => break,
                _ => return Err(format!("the long run ended otherwise: {task}").into()),
            }
        }
        Ok((answered_while_working > 0).then_some(slowest))
    }
}

/// A request that one client sends back to back on its connection.
type Request<'a> = dyn Fn(&mut Connection) -> Result<()> + Sync + 'a;

/// The plan's clients, each on its own keep-alive connection to `address`, sending `request`
/// back to back for one round: the requests completed and the time until the last one was.
fn drive(address: SocketAddr, request: &Request<'_>, plan: &Plan) -> Result<(u64, Duration)> {
    let started = Instant::now();
    let deadline = started + plan.round;
    let client = || -> Result<u64, String> {
        let mut connection = Connection::open(address).map_err(|error| error.to_string())?;
        let mut done = 0;
        while Instant::now() < deadline {
            request(&mut connection).map_err(|error| error.to_string())?;
            done += 1;
        }
        Ok(done)
    };
    let done = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..plan.clients).map(|_| scope.spawn(client)).collect();
        clients
            .into_iter()
            .map(|handle| handle.join().map_err(|_| "a client panicked".to_owned())?)
            .sum::<Result<u64, String>>()
    })?;
    Ok((done, started.elapsed()))
}

/// A call of the JS floor's Durable Object, through its Worker.
#[derive(Clone, Copy)]
enum JsCall {
    /// `ping()`, which returns at once.
    Ping,
    /// `insert(body)` of a 120-byte text: one row, one statement.
    Insert,
}

/// The text the JS floor inserts per call: about the size of a no-op step's row.
const JS_ROW: [u8; 120] = [b'x'; 120];

/// One call of the JS floor's object `name` on `connection`.
fn js_call(connection: &mut Connection, call: JsCall, name: &str) -> Result<()> {
    match call {
        JsCall::Ping => expect_ok(connection, "GET", &format!("/ping/{name}"), b""),
        JsCall::Insert => expect_ok(connection, "POST", &format!("/insert/{name}"), &JS_ROW),
    }
}

/// One request on `connection`; an error unless it is answered 200.
fn expect_ok(connection: &mut Connection, method: &str, path: &str, body: &[u8]) -> Result<()> {
    let response = connection
        .request(method, path, &[], body)
        .map_err(|error| format!("{method} {path}: {error}"))?;
    if response.status != 200 {
        return Err(format!("{method} {path} answered {}", response.status).into());
    }
    Ok(())
}

/// Sequential requests of each kind per round of the CPU measurement.
const CPU_REQUESTS: u32 = 300;
/// Rounds of the CPU measurement; each drives every kind once, in turn.
const CPU_ROUNDS: usize = 3;

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

/// Milliseconds since the epoch of an RFC 3339 UTC time with milliseconds, as the wire
/// writes them (`2026-11-29T13:03:49.895Z`).
fn epoch_millis(text: &str) -> Option<u64> {
    let (date, time) = text.strip_suffix('Z')?.split_once('T')?;
    let mut date = date.split('-').map(|part| part.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let (hms, millis) = time.split_once('.').unwrap_or((time, "0"));
    let mut hms = hms.split(':').map(|part| part.parse::<i64>().ok());
    let (hours, minutes, seconds) = (hms.next()??, hms.next()??, hms.next()??);
    // Days from the civil date (Howard Hinnant's algorithm).
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hours * 3600 + minutes * 60 + seconds;
    u64::try_from(seconds * 1000 + millis.parse::<i64>().ok()?).ok()
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

/// The module's size, raw and gzipped (`gzip -9`).
pub(crate) fn wasm_size(path: &Path) -> Result<(u64, u64)> {
    let raw = std::fs::metadata(path)?.len();
    let gzipped = Command::new("gzip").arg("-9c").arg(path).output()?;
    if !gzipped.status.success() {
        return Err("gzip failed".into());
    }
    Ok((raw, gzipped.stdout.len() as u64))
}

/// The latency table, and the targets against the floors.
fn print_latencies(plan: &Plan, latencies: &Latencies) {
    let Latencies {
        floor,
        worker,
        get,
        create,
        fresh,
        echo,
        read,
        fresh_insert,
        js_ping,
        js_insert,
        none,
        rpc_ping,
        rpc_sql,
    } = latencies;
    println!();
    println!(
        "Cloudflare host under workerd (wrangler dev), {} samples per latency",
        plan.samples
    );
    println!("| measurement | p50 | p90 | p99 | vs floor p50 | target | verdict |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    // One row: the percentiles, the p50 against the floor's, and the target and verdict if any.
    let row = |what: &str, latency: &Latency, target: Option<(f64, &str)>| {
        let against = ratio(latency.p50, floor.p50);
        let (target, outcome) = match target {
            Some((most, shown)) => (format!("<= {shown}"), verdict(against <= most)),
            None => (String::new(), ""),
        };
        println!(
            "| {what} | {} | {} | {} | {against:.2}x | {target} | {outcome} |",
            millis(latency.p50),
            millis(latency.p90),
            millis(latency.p99)
        );
    };
    row("floor: bare Durable Object fetch", floor, None);
    row(
        "floor: bare Durable Object RPC call (the hop tasks/get takes)",
        rpc_ping,
        None,
    );
    row(
        "floor: the same RPC call, three reads by key in the object",
        rpc_sql,
        None,
    );
    row(
        "floor: the Worker answers at once (HTTP in and out)",
        none,
        None,
    );
    row("server/discover (the Worker alone)", worker, None);
    row("floor: a JSON body to a bare object and back", echo, None);
    let body_floor = "floor: the Worker reads a tasks/get body, a bare fetch, the body back";
    row(body_floor, read, None);
    row("floor: bare fetch to a new object", fresh, None);
    let creation_floor = "floor: a new object creates a table, inserts a row, sets its alarm";
    row(creation_floor, fresh_insert, None);
    row(
        "JS floor: JS Worker -> JS SQLite object, RPC ping",
        js_ping,
        None,
    );
    row(
        "JS floor: JS Worker -> JS SQLite object, RPC insert",
        js_insert,
        None,
    );
    let most_get = 1.0 + TARGET_GET_OVERHEAD;
    let shown_get = format!("{most_get:.2}x");
    row(
        "tasks/get through the router",
        get,
        Some((most_get, &shown_get)),
    );
    let shown_create = format!("{TARGET_CREATE_RATIO:.1}x");
    row(
        "task creation (tools/call)",
        create,
        Some((TARGET_CREATE_RATIO, &shown_create)),
    );
    println!(
        "tasks/get is {:.2}x the body floor's p50; creation is {:.2}x the new object's insert and alarm.",
        ratio(get.p50, read.p50),
        ratio(create.p50, fresh_insert.p50)
    );
    print_against_js_floor(get, js_insert);
    print_poll_breakdown(latencies);
}

/// Where a poll's time goes, from differences of p50s measured in the same run (the runtime's
/// clock does not advance while a request computes, so nothing can be timed from inside).
fn print_poll_breakdown(latencies: &Latencies) {
    let Latencies {
        worker,
        get,
        none,
        rpc_ping,
        rpc_sql,
        ..
    } = latencies;
    let minus = |a: &Latency, b: &Latency| a.p50.saturating_sub(b.p50);
    let router = minus(worker, none);
    let hop = minus(rpc_ping, none);
    let object = get.p50.saturating_sub(rpc_ping.p50 + router);
    println!();
    println!(
        "Where a tasks/get's p50 goes (differences of p50s; {} in all)",
        millis(get.p50)
    );
    println!("| part | p50 | from |");
    println!("| --- | --- | --- |");
    println!(
        "| HTTP in and out, the Worker's entry | {} | the Worker answering at once |",
        millis(none.p50)
    );
    println!(
        "| the Worker's router | {} | server/discover less the Worker answering at once |",
        millis(router)
    );
    println!(
        "| the hop to the object and back (RPC) | {} | the RPC floor less the Worker answering at once |",
        millis(hop)
    );
    println!(
        "| the object: the call decoded, the task read, the reply encoded | {} | tasks/get less the RPC floor and the router |",
        millis(object)
    );
    println!(
        "| SQL of an unchanged task's read | 0 (kept in memory; {} if read) | the RPC floor with three reads less without |",
        millis(minus(rpc_sql, rpc_ping))
    );
}

/// `tasks/get` against the JS floor's RPC insert: at most its p50 and its p90.
fn print_against_js_floor(get: &Latency, js_insert: &Latency) {
    println!();
    println!(
        "| tasks/get vs JS floor RPC insert | tasks/get | JS RPC insert | ratio | target | verdict |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let pairs = [
        ("p50", get.p50, js_insert.p50),
        ("p90", get.p90, js_insert.p90),
    ];
    for (name, ours, floor) in pairs {
        println!(
            "| {name} | {} | {} | {:.2}x | <= 1.00x | {} |",
            millis(ours),
            millis(floor),
            ratio(ours, floor),
            verdict(ours <= floor)
        );
    }
}

/// The throughput table: `tasks/get` against the JS floor's RPC insert (and ping).
fn print_cpu(plan: &Plan, costs: Option<&CpuCosts>) {
    println!();
    let Some(CpuCosts(costs)) = costs else {
        println!(
            "workerd CPU per request: not measured (no /proc, or wrangler's processes not found)"
        );
        return;
    };
    println!(
        "workerd CPU per request: the process that runs the Worker and its objects, not wrangler's \
         proxy; {} rounds of {} sequential requests per kind, interleaved",
        plan.cpu_rounds, plan.cpu_requests
    );
    println!("| request | CPU per request | vs JS RPC insert |");
    println!("| --- | --- | --- |");
    let insert = costs[1];
    for ((_, what), cost) in CPU_PROBES.iter().zip(costs) {
        let figure = cost.map_or("n/a".to_owned(), millis);
        let against = cost.zip(insert).map_or("n/a".to_owned(), |(cost, insert)| {
            format!("{:.2}x", ratio(cost, insert))
        });
        println!("| {what} | {figure} | {against} |");
    }
}

fn print_throughput(plan: &Plan, throughput: &Throughput) {
    let Throughput {
        get,
        js_insert,
        js_ping,
    } = throughput;
    let against = ratio(get.per_second(), js_insert.per_second());
    println!();
    println!(
        "{} concurrent clients, each on its own keep-alive connection; {} rounds of {} s per \
         measurement, interleaved, summed",
        plan.clients,
        plan.rounds,
        plan.round.as_secs_f64()
    );
    println!("| measurement | requests | requests/s | vs JS RPC insert | target | verdict |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let row = |what: &str, rate: &Rate, target: &str, outcome: &str| {
        println!(
            "| {what} | {} | {:.0} | {:.2}x | {target} | {outcome} |",
            thousands(rate.done),
            rate.per_second(),
            ratio(rate.per_second(), js_insert.per_second())
        );
    };
    let target = format!(">= {TARGET_THROUGHPUT_RATIO}x");
    let outcome = verdict(against >= TARGET_THROUGHPUT_RATIO);
    row("tasks/get of one completed task", get, &target, outcome);
    row("JS floor: RPC insert into one object", js_insert, "", "");
    row("JS floor: RPC ping of one object", js_ping, "", "");
}

/// The per-step, responsiveness and size table.
fn print_others(
    plan: &Plan,
    step: Duration,
    insert: Duration,
    slowest: Option<Duration>,
    (raw, gzipped): (u64, u64),
) {
    let step_ratio = ratio(step, insert);
    let Plan {
        step_runs,
        steps,
        long_run,
        ..
    } = *plan;
    println!();
    println!("| measurement | figure | target | verdict |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| no-op step, median of {step_runs} runs of {steps} | {} ({step_ratio:.2}x the insert) | <= {TARGET_STEP_RATIO:.0}x and < {} | {} |",
        micros(step),
        micros(TARGET_STEP),
        verdict(step_ratio <= TARGET_STEP_RATIO && step < TARGET_STEP)
    );
    println!(
        "| floor: bare insert in a Durable Object | {} | | |",
        micros(insert)
    );
    println!(
        "| slowest tasks/get during {long_run} steps | {} | < {} | {} |",
        slowest.map_or_else(|| "none answered while it ran".to_owned(), millis),
        millis(TARGET_RESPONSIVE),
        verdict(slowest.is_some_and(|slowest| slowest < TARGET_RESPONSIVE))
    );
    println!(
        "| report-task wasm{}, raw / gzip -9 | {} / {} bytes | gzip < {TARGET_GZIP_BYTES} | {} |",
        if plan.optimized { "" } else { " (no wasm-opt)" },
        thousands(raw),
        thousands(gzipped),
        verdict(gzipped < TARGET_GZIP_BYTES)
    );
}

#[cfg(test)]
mod tests {
    use super::epoch_millis;

    #[test]
    fn wire_times_are_read_as_epoch_milliseconds() {
        assert_eq!(epoch_millis("1970-01-01T00:00:01.250Z"), Some(1250));
        assert_eq!(
            epoch_millis("2026-11-29T13:03:49.895Z"),
            Some(1_795_957_429_895)
        );
        assert_eq!(
            epoch_millis("2024-02-29T23:59:59.001Z"),
            Some(1_709_251_199_001)
        );
        assert_eq!(epoch_millis("2026-11-29 13:03:49Z"), None);
    }
}
