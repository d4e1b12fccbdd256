//! The native benches' table: `tasks/get` under load for each worker count, on the host's own
//! listener and mounted in the axum service, with the mounted endpoint's figures over the
//! native host's; task creation for each worker count, against the SQLite writer's floor; and
//! the host's memory, with their targets (judged on the native host's figures).

use std::time::Duration;

use crate::scale::verdict;
use crate::stats::{Spread, mib, micros, millis, print_row, ratio, thousands};

use super::writer_floor::WriterFloor;
use super::{
    ANONYMOUS, CREATION_CONNECTIONS, CREATORS, LoadSummary, MOUNTED, MemorySample, Plan, SERVER,
    WorkerFigures, load,
};

/// Creation is said to be bound by the SQLite writer when the workers store tasks at this
/// share of the writer's floor or more.
const WRITER_BINDS: f64 = 0.7;

/// With two workers, `tasks/get` throughput should be at least this many times one worker's.
const TARGET_SCALING: f64 = 1.6;

/// `tasks/get` throughput should be at least this, per second.
const TARGET_THROUGHPUT: f64 = 10_000.0;

/// The p99 latency of `tasks/get` should be under this.
const TARGET_P99: Duration = Duration::from_millis(5);

/// The host's resident memory with the plan's parked tasks should be under this, in MiB.
const TARGET_RSS_MIB: u64 = 100;

/// Prints the load, creation and memory figures with their targets.
pub(super) fn print(
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
    println!(
        "mounted: the same fixtures served by {MOUNTED}, the endpoint mounted in the axum-app \
         example's service (request tracing, a bearer check, its tokio runtime), every request \
         with a bearer token of its {ANONYMOUS} user; its runs interleaved with the native \
         host's"
    );
    println!();
    print_row("measurement", "best", "median", "peak RSS", "target");
    for figures in by_workers {
        print_load_rows(&figures.load, "tasks/get", figures.workers, true);
        print_load_rows(&figures.mounted, "mounted", figures.workers, false);
    }
    print_mounted_ratios(by_workers);
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

/// The `tasks/get` rows of one endpoint (`what`: `tasks/get` for the native host's,
/// `mounted` for the axum service's) with `workers` workers; `judged`: whether its targets are
/// shown.
fn print_load_rows(load: &LoadSummary, what: &str, workers: usize, judged: bool) {
    let with = with_workers(workers);
    let target = |text: String| if judged { text } else { String::new() };
    let Spread { best, median } = load.throughput;
    print_row(
        &format!("{what} throughput{with}"),
        &format!("{}/s", thousands(best as u64)),
        &format!("{}/s", thousands(median as u64)),
        &mib(load.server_hwm_kib),
        &target(format!(
            "at least {}/s: {}",
            thousands(TARGET_THROUGHPUT as u64),
            verdict(median >= TARGET_THROUGHPUT)
        )),
    );
    print_row(
        &format!("{what} p50{with}"),
        &millis(load.p50.best),
        &millis(load.p50.median),
        "",
        "",
    );
    print_row(
        &format!("{what} p99{with}"),
        &millis(load.p99.best),
        &millis(load.p99.median),
        "",
        &target(format!(
            "under {} ms: {}",
            TARGET_P99.as_millis(),
            verdict(load.p99.median < TARGET_P99)
        )),
    );
    print_row(
        &format!("{what} server CPU{with}"),
        &micros(load.server_cpu.best),
        &micros(load.server_cpu.median),
        "",
        "",
    );
    print_row(
        &format!("{what} generator CPU{with}"),
        &micros(load.client_cpu.best),
        &micros(load.client_cpu.median),
        "",
        "",
    );
}

/// The mounted endpoint's median throughput, latencies and server CPU per request over the
/// native host's, for each worker count.
fn print_mounted_ratios(by_workers: &[WorkerFigures]) {
    println!();
    print_row(
        "mounted / native, medians",
        "throughput",
        "p50",
        "p99",
        "server CPU/tasks/get",
    );
    for figures in by_workers {
        let (mounted, native) = (&figures.mounted, &figures.load);
        let times = |ratio: f64| format!("{ratio:.2}x");
        print_row(
            &format!("  tasks/get{}", with_workers(figures.workers)),
            &times(ratio(mounted.throughput.median, native.throughput.median)),
            &times(ratio(mounted.p50.median, native.p50.median)),
            &times(ratio(mounted.p99.median, native.p99.median)),
            &times(ratio(mounted.server_cpu.median, native.server_cpu.median)),
        );
    }
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
        &format!("mounted tasks/get, {} workers / 1", most.workers),
        &format!("{:.2}x", scaled(|f| f.mounted.throughput.median)),
        "",
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
