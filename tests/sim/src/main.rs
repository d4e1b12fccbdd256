//! `sim`: runs the simulator over many seeds and prints its figures.
//!
//! `sim --seeds N [--seed S] [--reports R] [--without explicit,nested,joins,far,offers,draws,cleanups,children,races,deploys]` runs
//! seeds `S..S+N` (default S = 0), printing at most R failing seeds (default 5), with a grammar
//! that leaves out the named constructs;
//! `DURABLE_MCP_SIM_SEED=<seed>` runs that one seed. Exits with 1 on any violation.

use std::process::ExitCode;
use std::time::Instant;

use durable_mcp_sim::{Config, Grammar, Totals, report, run_seed};

fn main() -> ExitCode {
    let mut seeds: u64 = 1000;
    let mut first: u64 = 0;
    let mut reports: usize = 5;
    let mut config = Config::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> u64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} takes a number"))
        };
        match arg.as_str() {
            "--seeds" => seeds = value("--seeds"),
            "--seed" => first = value("--seed"),
            "--reports" => reports = value("--reports") as usize,
            "--without" => {
                let names = args.next().unwrap_or_default();
                let Some(grammar) = Grammar::without(&names) else {
                    eprintln!(
                        "sim: --without takes explicit,nested,joins,far,offers,draws,cleanups,children,races,deploys"
                    );
                    return ExitCode::from(2);
                };
                config.grammar = grammar;
            }
            other => {
                eprintln!(
                    "sim: unknown argument {other:?}; usage: sim --seeds N [--seed S] [--reports R] [--without LIST]"
                );
                return ExitCode::from(2);
            }
        }
    }
    if let Ok(seed) = std::env::var("DURABLE_MCP_SIM_SEED") {
        first = seed.parse().expect("DURABLE_MCP_SIM_SEED is a number");
        seeds = 1;
        reports = 1;
    }
    // Wall-clock time only measures the run; the simulation itself is on virtual time.
    #[allow(clippy::disallowed_methods)]
    let started = Instant::now();
    let mut totals = Totals::default();
    let mut by_kind: std::collections::BTreeMap<&'static str, (u64, u64)> = Default::default();
    let mut printed = 0;
    for seed in first..first.saturating_add(seeds) {
        let (scenario, outcome) = run_seed(seed, &config);
        totals.add(seed, &outcome);
        let mut kinds: Vec<&'static str> = outcome.violations.iter().map(|v| v.kind).collect();
        // Each kind once per seed.
        kinds.sort_unstable();
        kinds.dedup();
        for kind in kinds {
            let entry = by_kind.entry(kind).or_insert((0, seed));
            entry.0 += 1;
        }
        if !outcome.violations.is_empty() && printed < reports {
            printed += 1;
            print!("{}", report(&scenario, &outcome, 300));
        }
    }
    let [failed, before, after, torn] = totals.faults_by_kind;
    let [completed, child_failed, cancelled] = totals.children_by_end;
    let [rename, remove, behind_work, behind_wait] = totals.deploys;
    let [idle, refused, old_path, new_code] = totals.deploy_judgements;
    let deploys: u64 = totals.deploys.iter().flatten().sum();
    println!(
        "seeds run: {}, events: {}, store writes: {}, faults injected: {} ({failed} failed \
         writes, {before} crashes before a write, {after} after one, {torn} torn batches losing \
         {} step rows), restarts: {}, step closure runs: {}, child tasks: {} ({completed} \
         completed, {child_failed} failed, {cancelled} cancelled; {} joins returned), \
         races of a cancel and an answer: {} ({} with nothing after the answer), deploys: \
         {deploys} (ungated/gated: rename {}/{}, remove {}/{}, move behind new work {}/{}, \
         move behind a wait {}/{}; judged {refused} refused, {old_path} kept the old path, \
         {new_code} ran the new code, {idle} found no task in flight; {} under a task that had \
         recorded the changed step; {} tasks failed refused), violations: {} (in {} seeds), {:.1} s",
        totals.seeds,
        totals.events,
        totals.writes,
        totals.faults,
        totals.torn_rows,
        totals.restarts,
        totals.closure_runs,
        totals.children,
        totals.joins,
        totals.races,
        totals.bare_races,
        rename[0],
        rename[1],
        remove[0],
        remove[1],
        behind_work[0],
        behind_work[1],
        behind_wait[0],
        behind_wait[1],
        totals.deploys_over_target,
        totals.refusals,
        totals.violations,
        totals.failing_seeds.len(),
        started.elapsed().as_secs_f64()
    );
    for (kind, (count, seed)) in &by_kind {
        println!("  [{kind}] in {count} seed(s), first seed {seed}");
    }
    if totals.violations > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
