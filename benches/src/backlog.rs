//! `cargo xtask bench backlog`: the native host restarted under a backlog (issue 27), the third
//! table of `cargo xtask bench`.
//!
//! The release build of `report-task` (built first, with `cargo build --release -p
//! report-task`) runs the backlog scenario of `durable_mcp_tests::backlog` once for each of
//! [`COUNTS`] tasks: the tasks are created while the report service holds every fetch, the
//! host is SIGKILLed, and it starts again on its state directory with each fetch taking
//! 50-600 ms. The table shows the time from the restart to the first answered request, the
//! `tasks/get` latency while the backlog drains (as fast as answered, and on a fixed schedule
//! timed from when each was scheduled, which is the one judged: see the scenario's docs), the
//! drain time, and whether every task finished exactly once.
//!
//! Host settings in this process's environment ([`HOST_TUNING`]) reach the server, and the
//! table names them. Targets are shown next to the figures, never enforced; the command fails
//! if a run errors (a server that does not answer, a backlog that does not drain) or breaks
//! exactly-once, after printing what it measured.
//!
//! A smoke run ([`Scale::Smoke`]) does it once with [`SMOKE_COUNT`] tasks on the debug build
//! `cargo xtask clients` made.

use std::path::Path;
use std::time::Duration;

use durable_mcp_tests::backlog::{self, BINARY, BacklogFigures, BacklogPlan, HOST_TUNING};
use xtask::Result;
use xtask::process::{Profile, build_binary};

use crate::scale::{Scale, verdict};
use crate::stats::{mib, millis, print_row, thousands};

/// The backlogs measured: the issue's, and five times it.
const COUNTS: [usize; 2] = [10_000, 50_000];

/// The backlog of a smoke run.
const SMOKE_COUNT: usize = 50;

/// The restarted host should answer its first request within this.
const TARGET_FIRST_ANSWER: Duration = Duration::from_secs(1);

/// The p99 latency of `tasks/get` while the backlog drains should be under this.
const TARGET_P99: Duration = Duration::from_millis(50);

/// One backlog's run: its size and what it measured, or why it failed.
struct Run {
    tasks: usize,
    outcome: std::result::Result<BacklogFigures, String>,
}

/// `cargo xtask bench backlog [--smoke]`: builds the server, runs the scenario for each
/// backlog, and prints the table.
pub fn run(scale: Scale) -> Result<()> {
    let (profile, counts): (_, &[usize]) = match scale {
        Scale::Full => (Profile::Release, &COUNTS),
        Scale::Smoke => (Profile::Debug, &[SMOKE_COUNT]),
    };
    let binary = build_binary(BINARY, profile)?;
    let mut runs = Vec::new();
    for &tasks in counts {
        eprintln!("bench backlog: {} tasks", thousands(tasks as u64));
        let dir = tempfile::tempdir()?;
        let mut plan = BacklogPlan::new(&binary, tasks).tuning_from_env();
        plan.progress = true;
        let outcome = backlog::run(&plan, dir.path());
        if let Ok(figures) = &outcome {
            eprintln!("{figures}");
        }
        runs.push(Run { tasks, outcome });
    }
    print_table(scale, &binary, &runs);
    let failed: Vec<String> = runs
        .iter()
        .filter_map(|run| match &run.outcome {
            Err(error) => Some(format!("{} tasks: {error}", thousands(run.tasks as u64))),
            Ok(figures) if !figures.exactly_once.holds() => Some(format!(
                "{} tasks: exactly-once {}",
                thousands(run.tasks as u64),
                figures.exactly_once
            )),
            Ok(_) => None,
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("the backlog bench failed: {}", failed.join("; ")).into())
    }
}

/// Prints one column per backlog, with the targets.
fn print_table(scale: Scale, binary: &Path, runs: &[Run]) {
    let plan = BacklogPlan::new(binary, 0);
    // The host settings this process passes on; each run also sets DURABLE_MCP_MAX_WAITING
    // above its backlog (see `BacklogPlan::new`).
    let settings: Vec<String> = HOST_TUNING
        .iter()
        .filter_map(|name| Some(format!("{name}={}", std::env::var(name).ok()?)))
        .collect();
    println!();
    println!(
        "durable-mcp bench, native host restarted under a backlog: {} {BINARY} on 127.0.0.1, \
         state in {} (set TMPDIR to move it); host settings: {}",
        if scale == Scale::Full {
            "release"
        } else {
            "debug"
        },
        std::env::temp_dir().display(),
        if settings.is_empty() {
            format!("none of {} set", HOST_TUNING.join(", "))
        } else {
            settings.join(" ")
        }
    );
    println!(
        "each run: send_report tasks created over {} connections while the report service holds \
         every fetch; the host SIGKILLed and started again on its state directory, fetches now \
         taking {}-{} ms; {} connections poll tasks/get as fast as answered, one more every {} ms",
        plan.creators,
        plan.fetch_delay.0.as_millis(),
        plan.fetch_delay.1.as_millis(),
        plan.pollers,
        plan.pace.as_millis()
    );
    println!();
    let header: Vec<String> = runs.iter().map(|run| thousands(run.tasks as u64)).collect();
    row("measurement, tasks in the backlog", &header, "target");
    figure_row(runs, "created, first phase", |f| secs(f.created_in), "");
    figure_row(
        runs,
        "fetches held at the kill",
        |f| thousands(f.fetched_before_kill as u64),
        "",
    );
    figure_row(
        runs,
        "tasks refetched before the kill",
        |f| thousands(f.retried_before_kill as u64),
        "",
    );
    figure_row(
        runs,
        "restart to the URL line",
        |f| millis(f.to_url_line),
        "",
    );
    let first = judged(runs, |f| f.to_first_answer < TARGET_FIRST_ANSWER);
    figure_row(
        runs,
        "restart to the first answer",
        |f| millis(f.to_first_answer),
        &format!("under {} s: {first}", TARGET_FIRST_ANSWER.as_secs()),
    );
    let every = format!("every {} ms", plan.pace.as_millis());
    figure_row(
        runs,
        &format!("tasks/get p50, {every}"),
        |f| millis(f.paced.p50),
        "",
    );
    let p99 = judged(runs, |f| f.paced.p99 < TARGET_P99);
    figure_row(
        runs,
        &format!("tasks/get p99, {every}"),
        |f| millis(f.paced.p99),
        &format!("under {} ms: {p99}", TARGET_P99.as_millis()),
    );
    figure_row(
        runs,
        &format!("tasks/get max, {every}"),
        |f| millis(f.paced.max),
        "",
    );
    figure_row(
        runs,
        "tasks/get p50, as fast as answered",
        |f| millis(f.latency.p50),
        "",
    );
    figure_row(
        runs,
        "tasks/get p99, as fast as answered",
        |f| millis(f.latency.p99),
        "",
    );
    figure_row(
        runs,
        "tasks/get max, as fast as answered",
        |f| millis(f.latency.max),
        "",
    );
    figure_row(
        runs,
        "tasks/get answered / failed",
        |f| format!("{}/{}", f.latency.count + f.paced.count, f.poll_errors),
        "",
    );
    figure_row(
        runs,
        "drain, first answer to all ended",
        |f| secs(f.drain),
        "",
    );
    figure_row(runs, "restart to all ended", |f| secs(f.to_all_ended), "");
    figure_row(
        runs,
        "restart to the last send",
        |f| f.to_last_send.map_or("?".to_owned(), secs),
        "",
    );
    figure_row(
        runs,
        "host peak RSS after the restart",
        |f| f.host_peak_rss_kib.map_or("?".to_owned(), mib),
        "",
    );
    figure_row(
        runs,
        "host CPU after the restart",
        |f| f.host_cpu.map_or("?".to_owned(), secs),
        "",
    );
    figure_row(
        runs,
        "tasks completed as expected",
        |f| thousands(f.exactly_once.completed as u64),
        "",
    );
    figure_row(
        runs,
        "tasks ended otherwise",
        |f| thousands(f.exactly_once.ended_otherwise as u64),
        "",
    );
    figure_row(
        runs,
        "exactly once",
        |f| {
            if f.exactly_once.holds() {
                "holds"
            } else {
                "BROKEN"
            }
            .to_owned()
        },
        "every task completed, one send key",
    );
    for run in runs {
        if let Err(error) = &run.outcome {
            println!(
                "{} tasks: the run failed: {error}",
                thousands(run.tasks as u64)
            );
        }
    }
    println!();
    println!(
        "times are from just before the restarted process was spawned; the first answer is the \
         first tasks/get answered in a loop of fresh connections from then; a task has ended \
         when a poller saw it so"
    );
    println!(
        "tasks/get every {} ms: one connection on a fixed schedule, each request timed from when \
         the schedule meant to send it, so a stall counts for every request it held up (the \
         pollers that ask as fast as they are answered ask once per stall, and their \
         percentiles hide it); the target is judged on it",
        plan.pace.as_millis()
    );
}

/// The figure `pick` reads from a run, or `failed`.
fn cell(run: &Run, pick: &dyn Fn(&BacklogFigures) -> Option<String>) -> String {
    match &run.outcome {
        Ok(figures) => pick(figures).unwrap_or_default(),
        Err(_) => "failed".to_owned(),
    }
}

/// A row of one figure per run.
fn figure_row(runs: &[Run], what: &str, pick: impl Fn(&BacklogFigures) -> String, target: &str) {
    let cells: Vec<String> = runs
        .iter()
        .map(|run| cell(run, &|figures| Some(pick(figures))))
        .collect();
    row(what, &cells, target);
}

/// Prints a row: the measurement, up to three figures, the target.
fn row(what: &str, cells: &[String], target: &str) {
    let cell = |i: usize| cells.get(i).map_or("", String::as_str);
    print_row(what, cell(0), cell(1), cell(2), target);
}

/// The verdicts of `met` over the runs, in their order: `met`, `met / MISSED`...
fn judged(runs: &[Run], met: impl Fn(&BacklogFigures) -> bool) -> String {
    let verdicts: Vec<&str> = runs
        .iter()
        .map(|run| match &run.outcome {
            Ok(figures) => verdict(met(figures)),
            Err(_) => "failed",
        })
        .collect();
    verdicts.join(" / ")
}

/// A duration in seconds, two decimals: `1.25 s`.
fn secs(duration: Duration) -> String {
    format!("{:.2} s", duration.as_secs_f64())
}
