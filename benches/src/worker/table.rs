//! The Worker bench's tables, with the targets against the floors measured in the same run.

use std::time::Duration;

use crate::scale::verdict;
use crate::stats::{micros, millis, ratio, thousands};

use super::cold::{ColdFigures, Firsts, NEXT_PAIRS, WorkerCold};
use super::{CPU_PROBES, CpuCosts, Latencies, Latency, Plan, Rate, Throughput};

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
/// `tasks/get` throughput under [`CLIENTS`](super::CLIENTS) clients, at least this fraction of the JS floor's
/// RPC insert.
const TARGET_THROUGHPUT_RATIO: f64 = 0.9;

/// The cold-start tables: each Worker's first and next requests, over the JS floor's and, for
/// the durable-mcp Workers, over the Rust floor's.
pub(super) fn print_cold(cold: &ColdFigures) {
    let ColdFigures {
        starts,
        optimized,
        bench,
        js_floor,
        rust_floor,
        report_task,
    } = cold;
    println!();
    println!(
        "Cold start under wrangler dev: each Worker started {}, in rotation and one at a time, \
         each with a new state directory and no request before the measurement (wrangler's \
         readiness read from its log; the port only connected to). On one new keep-alive \
         connection, opened first: the first create (a task; for a floor, a new object's first \
         insert) and the first get of it (tasks/get; a floor's read of that row), both through \
         Durable Object RPC, then {NEXT_PAIRS} more pairs, each creating anew. The Rust floor is \
         the JS floor's Worker and object in workers-rs and nothing else: the least a Rust \
         Worker's first requests cost. Firsts: median over the starts (min-max); next: median of \
         all {} pooled. Ratios: the Worker's figure over each floor's, from the same run. \
         report-task {}.",
        times(*starts),
        starts * NEXT_PAIRS,
        if *optimized {
            "as deployed (wasm-opt)"
        } else {
            "without wasm-opt"
        }
    );
    // Each Worker, with the floors under it: a floor is not divided by itself, nor the JS floor
    // by the Rust floor, which stands on more.
    let rows = [
        ColdRow::new("bench Worker", bench, [Some(js_floor), Some(rust_floor)]),
        ColdRow::new(
            "report-task",
            report_task,
            [Some(js_floor), Some(rust_floor)],
        ),
        ColdRow::new("Rust floor", rust_floor, [Some(js_floor), None]),
        ColdRow::new("JS floor", js_floor, [None, None]),
    ];
    let over = "vs JS floor | vs Rust floor";
    println!("| Worker | first create | {over} | first get | {over} |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for row in &rows {
        println!(
            "| {} | {} | {} |",
            row.name,
            row.cells(|of| of.first_create),
            row.cells(|of| of.first_get)
        );
    }
    println!();
    println!(
        "| Worker | next creates | {over} | next gets | {over} | first create over next creates \
         | first get over next gets |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for row in &rows {
        let of = row.figures;
        println!(
            "| {} | {} | {} | {:.2}x | {:.2}x |",
            row.name,
            row.cells(|of| alone(of.next_create)),
            row.cells(|of| alone(of.next_get)),
            ratio(of.first_create.median, of.next_create),
            ratio(of.first_get.median, of.next_get)
        );
    }
}

/// A row of the cold-start tables: a Worker's figures, and the floors (JS, Rust) they are
/// divided by; `None` leaves that ratio blank.
struct ColdRow<'a> {
    name: &'static str,
    figures: &'a WorkerCold,
    floors: [Option<&'a WorkerCold>; 2],
}

impl<'a> ColdRow<'a> {
    fn new(
        name: &'static str,
        figures: &'a WorkerCold,
        floors: [Option<&'a WorkerCold>; 2],
    ) -> ColdRow<'a> {
        ColdRow {
            name,
            figures,
            floors,
        }
    }

    /// One figure's three cells: the figure, its ratio over the JS floor's, over the Rust
    /// floor's.
    fn cells(&self, figure: fn(&WorkerCold) -> Firsts) -> String {
        let ours = figure(self.figures);
        let [js, rust] = self.floors.map(|floor| {
            floor.map_or(String::new(), |floor| {
                format!("{:.2}x", ratio(ours.median, figure(floor).median))
            })
        });
        format!("{} | {js} | {rust}", spread(ours))
    }
}

/// `once`, `twice` or `<n> times`.
fn times(n: usize) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    }
}

/// A pooled median as a [`Firsts`] of one value, shown without a spread.
fn alone(median: Duration) -> Firsts {
    Firsts {
        median,
        min: median,
        max: median,
    }
}

/// The median, and the min-max if they differ from it: `12.50 ms (10.00-20.00)`.
fn spread(firsts: Firsts) -> String {
    let Firsts { median, min, max } = firsts;
    if min == median && max == median {
        return millis(median);
    }
    let bare = |duration: Duration| format!("{:.2}", duration.as_secs_f64() * 1e3);
    format!("{} ({}-{})", millis(median), bare(min), bare(max))
}

/// The latency table, and the targets against the floors.
pub(super) fn print_latencies(plan: &Plan, latencies: &Latencies) {
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
pub(super) fn print_cpu(plan: &Plan, costs: Option<&CpuCosts>) {
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

pub(super) fn print_throughput(plan: &Plan, throughput: &Throughput) {
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
pub(super) fn print_others(
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
