//! The first table of `cargo xtask bench`: what a journaled step costs.
//!
//! Three measurements, each on a fresh SQLite file in a temporary directory:
//!
//! - `engine`: a task that runs [`STEPS`] no-op steps, driven through the real engine by the
//!   [`Harness`] on a [`SqliteStore`]; timed from `create` until the task is completed.
//! - `logged`: the same with the native host's log as `NativeHost::run` installs it when
//!   `RUST_LOG` is not set (the `info` filter, compact lines, on the child's stderr, which goes
//!   to `/dev/null`): what the default log costs a step.
//! - `bare`: [`STEPS`] autocommit inserts of the step row the engine writes (`PUT_STEP` with
//!   the same parameters), on a connection with the store's settings: the floor the engine's
//!   per-step cost is compared with.
//! - `replay`: a task that ran [`STEPS`] steps and sleeps; timed is the activation that wakes
//!   it, which replays every recorded step (no closure runs again) and completes. Its peak RSS
//!   covers the run that recorded the journal as well.
//!
//! Each measurement runs in a child process of its own (this executable, re-invoked as
//! `bench-child <kind>`), so its peak RSS (`VmHWM`) is its own. A child prints one line,
//! `bench-result elapsed_ns=<n> start_rss_kib=<n> peak_rss_kib=<n>`, which the parent parses.
//! The parent runs every measurement [`RUNS`] times, interleaved, and prints the best and the
//! median. Targets are shown next to the figures, never enforced: the command fails only if a
//! measurement errors.

use std::path::Path;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use durable_mcp::__internals::new_task_id;
use durable_mcp::__internals::schema;
use durable_mcp::__internals::{bind, configure, install_native_log};
use durable_mcp::TaskStatus;
use durable_mcp::native::SqliteStore;
use durable_mcp::settings::LOG_FILTER_VAR;
use durable_mcp::store::{StepKind, StepRow, StepStatus};
use durable_mcp::testing::{Harness, VIRTUAL_EPOCH};
use durable_mcp::{StepError, TaskContext, TaskDefinition, TaskError, TaskRegistry};
use rusqlite::Connection;
use serde_json::{Value, json};
use xtask::Result;

use crate::procfs::status_kib;
use crate::scale::{Scale, verdict};
use crate::stats::{Ranked, Spread, mib, micros_per_op, millis, print_row, ratio, thousands};

/// Steps per task, inserts per bare run, recorded steps per replay.
const STEPS: u64 = 10_000;

/// Runs of each measurement.
const RUNS: usize = 5;

/// Steps and runs of a smoke run: enough to go through every code path once.
const SMOKE_STEPS: u64 = 100;
const SMOKE_RUNS: usize = 1;

/// The engine's cost per step should be at most this many times a bare insert's.
const TARGET_RATIO: f64 = 2.0;

/// Replaying the [`STEPS`]-step journal should take less than this.
const TARGET_REPLAY: Duration = Duration::from_millis(20);

/// The prefix of a child's result line.
const RESULT_PREFIX: &str = "bench-result ";

/// The registered name of the benchmark task.
const TASK: &str = "bench";

/// How many times step closures ran in this process: a replay must not add to it.
static CLOSURE_RUNS: AtomicU64 = AtomicU64::new(0);

/// What the native engine's measurements do at a scale.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Steps per task, inserts per bare run, recorded steps per replay.
    steps: u64,
    /// Runs of each measurement.
    runs: usize,
}

impl Plan {
    fn of(scale: Scale) -> Plan {
        match scale {
            Scale::Full => Plan {
                steps: STEPS,
                runs: RUNS,
            },
            Scale::Smoke => Plan {
                steps: SMOKE_STEPS,
                runs: SMOKE_RUNS,
            },
        }
    }
}

/// One measurement, run in a child process.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Engine,
    Logged,
    Bare,
    Replay,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Engine, Kind::Logged, Kind::Bare, Kind::Replay];

    fn name(self) -> &'static str {
        match self {
            Kind::Engine => "engine",
            Kind::Logged => "logged",
            Kind::Bare => "bare",
            Kind::Replay => "replay",
        }
    }

    fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// What one child reported.
#[derive(Clone, Copy, Debug)]
struct Sample {
    elapsed: Duration,
    start_rss_kib: u64,
    peak_rss_kib: u64,
}

/// Runs every measurement [`RUNS`] times in child processes and prints the table.
pub fn run(scale: Scale) -> Result<()> {
    let exe = std::env::current_exe()?;
    let plan = Plan::of(scale);
    let mut samples: [Vec<Sample>; Kind::ALL.len()] = Default::default();
    // Interleaved, so that a slow patch of the machine touches every measurement alike.
    for _ in 0..plan.runs {
        for kind in Kind::ALL {
            samples[kind as usize].push(spawn(&exe, kind, plan.steps)?);
        }
    }
    let [engine, logged, bare, replay] = samples.map(Summary::of);
    print_table(&plan, &engine?, &logged?, &bare?, &replay?);
    Ok(())
}

/// Runs one measurement of `steps` in a child process and parses its result line.
fn spawn(exe: &Path, kind: Kind, steps: u64) -> Result<Sample> {
    let mut child = Command::new(exe);
    child.args(["bench-child", kind.name(), &steps.to_string()]);
    match kind {
        // The log's lines go nowhere; its default filter is the one measured.
        Kind::Logged => child.env_remove(LOG_FILTER_VAR).stderr(Stdio::null()),
        _ => child.stderr(Stdio::inherit()),
    };
    let output = child.output()?;
    if !output.status.success() {
        return Err(format!("the {} measurement failed ({})", kind.name(), output.status).into());
    }
    let stdout = String::from_utf8(output.stdout)?;
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix(RESULT_PREFIX))
        .ok_or_else(|| format!("the {} measurement printed no result line", kind.name()))?;
    let field = |name: &str| -> Result<u64> {
        let value = line
            .split_whitespace()
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .ok_or_else(|| format!("no {name} in the result line {line:?}"))?;
        Ok(value.parse()?)
    };
    Ok(Sample {
        elapsed: Duration::from_nanos(field("elapsed_ns")?),
        start_rss_kib: field("start_rss_kib")?,
        peak_rss_kib: field("peak_rss_kib")?,
    })
}

/// `bench-child <kind> <steps>`: one measurement on a fresh database; prints its result line.
/// `bench-child load <args>` is the HTTP bench's load generator instead.
pub fn child(kind: &str, args: &[&str]) -> Result<()> {
    if kind == "load" {
        return crate::native::load::child(args);
    }
    let [steps] = args else {
        return Err(format!("the {kind} measurement takes one argument, its steps").into());
    };
    let steps: u64 = steps.parse()?;
    let kind = Kind::parse(kind).ok_or_else(|| format!("unknown measurement {kind:?}"))?;
    let start_rss_kib = status_kib("self", "VmHWM")?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.sqlite3");
    let measured = match kind {
        Kind::Engine => engine(&path, steps)?,
        Kind::Logged => {
            install_native_log()?;
            engine(&path, steps)?
        }
        Kind::Bare => bare(&path, steps)?,
        Kind::Replay => replay(&path, steps)?,
    };
    println!(
        "{RESULT_PREFIX}elapsed_ns={} start_rss_kib={start_rss_kib} peak_rss_kib={}",
        measured.elapsed.as_nanos(),
        measured.peak_rss_kib
    );
    Ok(())
}

/// The time a measured section took and the process's peak RSS right after it.
struct Measured {
    elapsed: Duration,
    peak_rss_kib: u64,
}

/// Runs and times `work`. The peak RSS is read at once, so that checks made afterwards (which
/// may load a whole journal) do not count.
fn measure<T>(work: impl FnOnce() -> T) -> Result<(T, Measured)> {
    let started = Instant::now();
    let value = work();
    let elapsed = started.elapsed();
    let peak_rss_kib = status_kib("self", "VmHWM")?;
    Ok((
        value,
        Measured {
            elapsed,
            peak_rss_kib,
        },
    ))
}

/// The benchmark task: `input.steps` no-op steps, then (if `input.sleep`) a one-hour sleep.
async fn bench_task(cx: &TaskContext, input: Value) -> Result<Value, TaskError> {
    let steps = input["steps"].as_u64().unwrap_or(0);
    for i in 0..steps {
        // One name in a loop: the engine keys the steps `noop`, `noop#2`, `noop#3`...
        let _: u64 = cx
            .step("noop", || async move {
                CLOSURE_RUNS.fetch_add(1, Ordering::Relaxed);
                Ok::<_, StepError>(i)
            })
            .await?;
    }
    if input["sleep"].as_bool() == Some(true) {
        cx.sleep("wait", "1h").await?;
    }
    Ok(json!({ "steps": steps }))
}

/// A harness on a SQLite store at `path`, with the benchmark task registered.
fn harness(path: &Path) -> Result<Harness> {
    let registry = TaskRegistry::new().register(TaskDefinition::new(TASK, |cx, input| {
        Box::pin(bench_task(cx, input))
    }));
    let store = SqliteStore::open(path)?;
    Ok(Harness::with_store(registry, Rc::new(store)))
}

/// Fails unless the task is `expected`. (An engine error in a tick panics in the harness,
/// which fails the child and so the command.)
fn check_status(harness: &Harness, task_id: &str, expected: TaskStatus) -> Result<()> {
    let status = harness.status(task_id);
    if status != expected {
        return Err(format!("the task is {status:?}, expected {expected:?}").into());
    }
    Ok(())
}

/// Fails unless the task's journal holds `expected` step rows.
fn check_journal(harness: &Harness, task_id: &str, expected: u64) -> Result<()> {
    let recorded = harness.journal(task_id).steps.len() as u64;
    if recorded != expected {
        return Err(format!("the journal holds {recorded} steps, expected {expected}").into());
    }
    Ok(())
}

/// The engine: create to completed for a task of `steps` steps.
fn engine(path: &Path, steps: u64) -> Result<Measured> {
    let mut harness = harness(path)?;
    let (id, measured) = measure(|| {
        let id = harness.create(TASK, json!({ "steps": steps }));
        harness.run_until_idle();
        id
    })?;
    check_status(&harness, &id, TaskStatus::Completed)?;
    check_journal(&harness, &id, steps)?;
    Ok(measured)
}

/// The replay: the activation that wakes a task from its sleep after `steps` recorded steps.
fn replay(path: &Path, steps: u64) -> Result<Measured> {
    let mut harness = harness(path)?;
    let id = harness.create(TASK, json!({ "steps": steps, "sleep": true }));
    harness.run_until_idle();
    check_status(&harness, &id, TaskStatus::Working)?;
    check_journal(&harness, &id, steps + 1)?;
    let runs_before = CLOSURE_RUNS.load(Ordering::Relaxed);
    if runs_before != steps {
        return Err(format!("{runs_before} closure runs before the replay").into());
    }
    let ((), measured) = measure(|| harness.advance("1h"))?;
    check_status(&harness, &id, TaskStatus::Completed)?;
    // Proof that the timed activation replayed: no step closure ran during it.
    let rerun = CLOSURE_RUNS.load(Ordering::Relaxed) - runs_before;
    if rerun != 0 {
        return Err(format!("{rerun} step closures ran again during the replay").into());
    }
    Ok(measured)
}

/// The floor: `steps` autocommit inserts of the engine's step row, one statement each.
fn bare(path: &Path, steps: u64) -> Result<Measured> {
    let connection = Connection::open(path)?;
    configure(&connection)?;
    connection.execute_batch(schema::CREATE_SCHEMA)?;
    // Prepared once, as the store's statement cache does.
    let mut insert = connection.prepare(schema::PUT_STEP)?;
    let task_id = new_task_id()?;
    let (inserted, measured) = measure(|| -> rusqlite::Result<()> {
        for i in 0..steps {
            // Built per insert, as the engine builds each row and its parameters.
            let row = step_row(i);
            let params = bind(schema::step_params(&task_id, &row));
            insert.execute(rusqlite::params_from_iter(params))?;
        }
        Ok(())
    })?;
    inserted?;
    let rows: u64 = connection.query_row("SELECT count(*) FROM steps", [], |r| r.get(0))?;
    if rows != steps {
        return Err(format!("the table holds {rows} rows, expected {steps}").into());
    }
    Ok(measured)
}

/// The row the engine records for the `i`-th (from 0) completed no-op step.
fn step_row(i: u64) -> StepRow {
    StepRow {
        key: if i == 0 {
            "noop".to_owned()
        } else {
            format!("noop#{}", i + 1)
        },
        kind: StepKind::Do,
        status: StepStatus::Completed,
        result: Some(i.to_string()),
        attempt: 1,
        next_attempt_at: None,
        wake_at: None,
        last_error: None,
        seq: i,
        created_at: VIRTUAL_EPOCH,
        completed_at: Some(VIRTUAL_EPOCH),
    }
}

/// One measurement's runs, summarised.
struct Summary {
    best: Duration,
    median: Duration,
    /// The highest peak RSS of any run.
    peak_rss_kib: u64,
    /// The lowest RSS a child had before it started measuring.
    start_rss_kib: u64,
}

impl Summary {
    /// Summarises one measurement's runs; an error if it has none.
    fn of(samples: Vec<Sample>) -> Result<Summary> {
        let times = samples.iter().map(|s| s.elapsed).collect();
        let Spread { best, median } = Ranked::lowest_first(times)
            .spread()
            .ok_or("a measurement ran no time")?;
        Ok(Summary {
            best,
            median,
            peak_rss_kib: samples.iter().map(|s| s.peak_rss_kib).max().unwrap_or(0),
            start_rss_kib: samples.iter().map(|s| s.start_rss_kib).min().unwrap_or(0),
        })
    }
}

fn print_table(plan: &Plan, engine: &Summary, logged: &Summary, bare: &Summary, replay: &Summary) {
    let Plan { steps, runs } = *plan;
    let (ratio_best, ratio_median) = (
        ratio(engine.best, bare.best),
        ratio(engine.median, bare.median),
    );
    println!(
        "durable-mcp bench: {} steps per task, SQLite files in {} (set TMPDIR to move \
         them)",
        thousands(steps),
        std::env::temp_dir().display()
    );
    println!(
        "each measurement ran {runs} times, interleaved, each run in its own process: best and \
         median of the {runs} runs; peak RSS is the highest VmHWM of the runs"
    );
    println!();
    print_row("measurement", "best", "median", "peak RSS", "target");
    print_row(
        "engine, per step (SQLite store)",
        &micros_per_op(engine.best, steps),
        &micros_per_op(engine.median, steps),
        &mib(engine.peak_rss_kib),
        "",
    );
    print_row(
        "engine, the host's default log on",
        &micros_per_op(logged.best, steps),
        &micros_per_op(logged.median, steps),
        &mib(logged.peak_rss_kib),
        &format!(
            "engine's +{:.1}% (median)",
            (ratio(logged.median, engine.median) - 1.0) * 100.0
        ),
    );
    print_row(
        "bare SQLite insert, per insert",
        &micros_per_op(bare.best, steps),
        &micros_per_op(bare.median, steps),
        &mib(bare.peak_rss_kib),
        "",
    );
    print_row(
        "engine / bare",
        &format!("{ratio_best:.2}x"),
        &format!("{ratio_median:.2}x"),
        "",
        &format!(
            "at most {TARGET_RATIO}x: {}",
            verdict(ratio_median <= TARGET_RATIO)
        ),
    );
    print_row(
        &format!("replay of {} recorded steps", thousands(steps)),
        &millis(replay.best),
        &millis(replay.median),
        &mib(replay.peak_rss_kib),
        &format!(
            "under {} ms: {}",
            TARGET_REPLAY.as_millis(),
            verdict(replay.median < TARGET_REPLAY)
        ),
    );
    println!();
    println!(
        "engine: create to completed, divided by {}; bare: autocommit INSERT of the same \
         step row, same pragmas",
        thousands(steps)
    );
    println!(
        "replay: the activation that wakes the task from a sleep after {} completed steps \
         (no step closure ran during it); its peak RSS covers recording the journal too",
        thousands(steps)
    );
    let baseline = [engine, bare, replay].map(|s| s.start_rss_kib);
    println!(
        "peak RSS includes each child's RSS before measuring: {} (engine), {} (bare), {} \
         (replay); targets are judged on the median",
        mib(baseline[0]),
        mib(baseline[1]),
        mib(baseline[2])
    );
}
