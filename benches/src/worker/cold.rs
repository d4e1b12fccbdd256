//! The cold start of `cargo xtask bench worker` (`cargo xtask bench cold` runs it alone): what
//! the first requests cost a Worker that `wrangler dev` has just started, against two floors
//! started the same way: the plain-JS floor, and the Rust floor (the least any Rust Worker's
//! first requests can cost).
//!
//! Four Workers are started in rotation, [`Plan::cold_starts`] rounds: the bench Worker, the
//! JavaScript floor (`benches/floor-js`), the Rust floor (`benches/floor-rs`, workers-rs and
//! one SQLite object, nothing else) and report-task as the root `wrangler.toml` deploys it.
//! Each start has a new state directory and runs alone: the one before has exited. No request
//! reaches the Worker before the measurement ([`WorkerProcess::start_unrequested`] reads
//! wrangler's log and only connects to the port). Then, on one new keep-alive connection,
//! opened first so that no figure holds the TCP connect: the first create and the first get of
//! what it created, then [`NEXT_PAIRS`] more pairs, each creating anew. A create is a
//! `tools/call` that returns a task (each task a new object), a get is `tasks/get` of it; for
//! either floor, the first insert into a new object (`POST /insert/<name>`) and its read (`GET
//! /read/<name>`), both through Durable Object RPC.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use durable_mcp_tests::http::{Connection, borrowed};
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::WorkerProcess;
use serde_json::{Value, json};
use xtask::Result;
use xtask::process::catch_panic;

use super::client::{JsCall, js_call};
use super::{BENCH_WORKER, JS_FLOOR, Plan, RUST_FLOOR};
use crate::stats::Ranked;

/// Create-and-get pairs measured after the first one, per start.
pub(super) const NEXT_PAIRS: usize = 10;
/// How long a stopped Worker's processes may take to exit before the next one starts anyway.
const EXIT_LIMIT: Duration = Duration::from_secs(10);

/// A Worker whose cold start is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Subject {
    /// The bench Worker (`benches/worker`): `many_steps` with `count: 0`.
    Bench,
    /// The JavaScript floor (`benches/floor-js`): a new object's first insert, and its read.
    JsFloor,
    /// The Rust floor (`benches/floor-rs`): the same routes, answered the same way.
    RustFloor,
    /// report-task as the root `wrangler.toml` deploys it: `send_report`.
    ReportTask,
}

impl Subject {
    /// The Workers in the order each round starts them.
    const ROTATION: [Subject; 4] = [
        Subject::Bench,
        Subject::JsFloor,
        Subject::RustFloor,
        Subject::ReportTask,
    ];

    /// The name shown in progress messages.
    fn label(self) -> &'static str {
        match self {
            Subject::Bench => "the bench Worker",
            Subject::JsFloor => "the JavaScript floor",
            Subject::RustFloor => "the Rust floor",
            Subject::ReportTask => "report-task as deployed",
        }
    }

    /// The directory whose `wrangler.toml` `wrangler dev` runs.
    fn dir(self, root: &Path) -> PathBuf {
        match self {
            Subject::Bench => root.join(BENCH_WORKER),
            Subject::JsFloor => root.join(JS_FLOOR),
            Subject::RustFloor => root.join(RUST_FLOOR),
            // The root wrangler.toml deploys report-task (its `main` is the example's build).
            Subject::ReportTask => root.to_path_buf(),
        }
    }

    /// Whether the Worker is a floor: it answers `POST /insert/<name>` and `GET /read/<name>`.
    fn is_floor(self) -> bool {
        matches!(self, Subject::JsFloor | Subject::RustFloor)
    }

    /// The task tool a create calls and its arguments; `None` for the floors, which answer
    /// `POST /insert/<name>` and `GET /read/<name>` instead.
    fn task_tool(self) -> Option<(&'static str, Value)> {
        match self {
            Subject::Bench => Some(("many_steps", json!({ "count": 0 }))),
            Subject::JsFloor | Subject::RustFloor => None,
            Subject::ReportTask => Some(("send_report", json!({ "to": "ada@example.org" }))),
        }
    }
}

/// The times of one create and of the get of what it created.
#[derive(Clone, Copy, Debug)]
struct Pair {
    create: Duration,
    get: Duration,
}

/// The pairs of one start: the first, then [`NEXT_PAIRS`].
#[derive(Debug)]
struct Start {
    first: Pair,
    next: Vec<Pair>,
}

/// The median of the first requests of every start, and their spread.
#[derive(Clone, Copy, Debug)]
pub(super) struct Firsts {
    /// The median over the starts.
    pub(super) median: Duration,
    /// The fastest start's.
    pub(super) min: Duration,
    /// The slowest start's.
    pub(super) max: Duration,
}

/// One Worker's cold-start figures over its starts.
#[derive(Clone, Copy, Debug)]
pub(super) struct WorkerCold {
    /// The first create after a start.
    pub(super) first_create: Firsts,
    /// The first get, of what the first create made.
    pub(super) first_get: Firsts,
    /// The median of the next creates of every start, pooled.
    pub(super) next_create: Duration,
    /// The median of the next gets of every start, pooled.
    pub(super) next_get: Duration,
}

/// The cold-start figures of the four Workers, from one run.
#[derive(Clone, Copy, Debug)]
pub(super) struct ColdFigures {
    /// Starts of each Worker.
    pub(super) starts: usize,
    /// Whether report-task was built as deployed (wasm-opt).
    pub(super) optimized: bool,
    /// The bench Worker.
    pub(super) bench: WorkerCold,
    /// The JavaScript floor.
    pub(super) js_floor: WorkerCold,
    /// The Rust floor.
    pub(super) rust_floor: WorkerCold,
    /// report-task as deployed.
    pub(super) report_task: WorkerCold,
}

/// Starts the four Workers in rotation, `plan.cold_starts` rounds, and measures each start's
/// first requests. The Workers must be built (report-task as `plan.optimized` says), and no
/// other `wrangler dev` of the bench running.
pub(super) fn measure(root: &Path, plan: &Plan) -> Result<ColdFigures> {
    let mut starts: [Vec<Start>; Subject::ROTATION.len()] = Default::default();
    for round in 1..=plan.cold_starts {
        for (subject, runs) in Subject::ROTATION.into_iter().zip(&mut starts) {
            eprintln!(
                "bench: cold start {round}/{} of {}",
                plan.cold_starts,
                subject.label()
            );
            runs.push(start_once(root, subject)?);
        }
    }
    let [bench, js_floor, rust_floor, report_task] = starts;
    Ok(ColdFigures {
        starts: plan.cold_starts,
        optimized: plan.optimized,
        bench: figures(&bench)?,
        js_floor: figures(&js_floor)?,
        rust_floor: figures(&rust_floor)?,
        report_task: figures(&report_task)?,
    })
}

/// Starts `subject` with a new state directory, measures its pairs, and stops it.
fn start_once(root: &Path, subject: Subject) -> Result<Start> {
    let state = tempfile::tempdir()?;
    let worker = start_unrequested(&subject.dir(root), state.path(), subject)?;
    let group = worker.process_group();
    let measured = Session::open(subject, &worker).and_then(|mut session| session.pairs());
    drop(worker);
    // The next start must not share the machine with this one's last processes.
    wait_group_exited(group);
    measured
}

/// [`WorkerProcess::start_unrequested`], its panic (the tests' way to fail) as an error.
fn start_unrequested(dir: &Path, state: &Path, subject: Subject) -> Result<WorkerProcess> {
    catch_panic(|| WorkerProcess::start_unrequested(dir, "wrangler.toml", state))
        .map_err(|message| format!("{} did not start: {message}", subject.label()).into())
}

/// Waits until no process of `group` is left but zombies, for at most [`EXIT_LIMIT`].
fn wait_group_exited(group: u32) {
    let began = Instant::now();
    while group_running(group) && began.elapsed() < EXIT_LIMIT {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a process of `group` is running (not a zombie); `false` without `/proc`.
fn group_running(group: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // After the command in parentheses: the state, the parent, the process group.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().take(3).collect();
        matches!(fields[..], [state, _, pgrp] if state != "Z" && pgrp == group.to_string())
    })
}

/// The figures of one Worker's starts (at least one).
fn figures(starts: &[Start]) -> Result<WorkerCold> {
    let firsts = |pick: fn(&Pair) -> Duration| {
        firsts(starts.iter().map(|start| pick(&start.first)).collect())
    };
    let next = |pick: fn(&Pair) -> Duration| {
        let pooled = starts.iter().flat_map(|start| start.next.iter().map(pick));
        Ranked::lowest_first(pooled.collect())
            .median()
            .ok_or("no cold start was measured")
    };
    Ok(WorkerCold {
        first_create: firsts(|pair| pair.create)?,
        first_get: firsts(|pair| pair.get)?,
        next_create: next(|pair| pair.create)?,
        next_get: next(|pair| pair.get)?,
    })
}

/// The median, min and max of `samples`.
fn firsts(samples: Vec<Duration>) -> Result<Firsts> {
    let ranked = Ranked::lowest_first(samples);
    match (ranked.median(), ranked.best(), ranked.worst()) {
        (Some(median), Some(min), Some(max)) => Ok(Firsts { median, min, max }),
        _ => Err("no cold start was measured".into()),
    }
}

/// One keep-alive connection to a Worker started cold, and its creates and gets.
struct Session {
    subject: Subject,
    connection: Connection,
    /// The request shapes of an MCP Worker (unused for the floors).
    client: McpClient,
    /// The floor's objects created so far, for a new name each time.
    objects: usize,
}

impl Session {
    /// Opens the connection: after it, nothing but the measured requests is sent.
    fn open(subject: Subject, worker: &WorkerProcess) -> Result<Session> {
        let client = McpClient::new(&worker.mcp_url());
        let address: SocketAddr = client.address();
        let connection = Connection::open(address)
            .map_err(|error| format!("connecting to {}: {error}", subject.label()))?;
        Ok(Session {
            subject,
            connection,
            client,
            objects: 0,
        })
    }

    /// The first pair and the next [`NEXT_PAIRS`].
    fn pairs(&mut self) -> Result<Start> {
        let first = self.pair()?;
        let next = (0..NEXT_PAIRS)
            .map(|_| self.pair())
            .collect::<Result<_>>()?;
        Ok(Start { first, next })
    }

    /// One create, then the get of what it created.
    fn pair(&mut self) -> Result<Pair> {
        let (create, created) = self.create()?;
        let get = self.get(&created)?;
        Ok(Pair { create, get })
    }

    /// Creates a task (its id), or a floor object with one row (its name); and the time.
    fn create(&mut self) -> Result<(Duration, String)> {
        let Some((tool, arguments)) = self.subject.task_tool() else {
            self.objects += 1;
            let name = format!("cold-{}", self.objects);
            let began = Instant::now();
            // The Rust floor answers the JS floor's routes.
            js_call(&mut self.connection, JsCall::Insert, &name)?;
            return Ok((began.elapsed(), name));
        };
        let params = json!({ "name": tool, "arguments": arguments });
        let (took, created) = self.mcp("tools/call", params)?;
        let id = created["taskId"]
            .as_str()
            .ok_or_else(|| format!("{tool} created no task: {created}"))?;
        Ok((took, id.to_owned()))
    }

    /// Gets `created` (a task, or a floor object's last row); the time.
    fn get(&mut self, created: &str) -> Result<Duration> {
        if self.subject.is_floor() {
            return self.floor_read(created);
        }
        let (took, task) = self.mcp("tasks/get", json!({ "taskId": created }))?;
        if task["status"].as_str().is_none() {
            return Err(format!("tasks/get of {created} answered {task}").into());
        }
        Ok(took)
    }

    /// `GET /read/<name>` on a floor, which must answer the row just inserted.
    fn floor_read(&mut self, name: &str) -> Result<Duration> {
        let path = format!("/read/{name}");
        let began = Instant::now();
        let response = self
            .connection
            .request("GET", &path, &[], b"")
            .map_err(|error| format!("GET {path}: {error}"))?;
        let took = began.elapsed();
        if response.status != 200 || response.body.is_empty() {
            return Err(format!("GET {path} answered {} with no row", response.status).into());
        }
        Ok(took)
    }

    /// One MCP request: the time to its response, and its `result`.
    fn mcp(&mut self, method: &str, params: Value) -> Result<(Duration, Value)> {
        let (body, headers) = self.client.build(method, params, true);
        let headers = borrowed(&headers);
        let body = body.to_string();
        let began = Instant::now();
        let response = self
            .connection
            .request("POST", "/mcp", &headers, body.as_bytes())
            .map_err(|error| format!("{method}: {error}"))?;
        let took = began.elapsed();
        let answer: Value = serde_json::from_slice(&response.body).map_err(|error| {
            format!(
                "{method} answered {} and no JSON ({error})",
                response.status
            )
        })?;
        let result = answer
            .get("result")
            .cloned()
            .ok_or_else(|| format!("{method} answered {answer}"))?;
        Ok((took, result))
    }
}
