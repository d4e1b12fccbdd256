//! The bounded simulation CI runs: a fixed number of seeds (about 30 s of a debug build on a
//! slow two-core machine), with not one violation. `cargo xtask sim --seeds N` runs more.

use durable_mcp_sim::{Config, Totals, report, run_seed};

/// Seeds run by `cargo test`: a fixed count, so that a run is the same everywhere.
const SEEDS: u64 = 1200;

#[test]
fn bounded_seeds_hold_every_invariant() {
    let config = Config::default();
    let mut totals = Totals::default();
    let mut reports = String::new();
    let mut kinds = std::collections::BTreeMap::<&str, u64>::new();
    for seed in 0..SEEDS {
        let (scenario, outcome) = run_seed(seed, &config);
        totals.add(seed, &outcome);
        for violation in &outcome.violations {
            *kinds.entry(violation.kind).or_default() += 1;
        }
        if !outcome.violations.is_empty() && totals.failing_seeds.len() <= 3 {
            reports.push_str(&report(&scenario, &outcome, 100));
        }
    }
    assert_eq!(
        totals.violations,
        0,
        "{} violations in {} of {} seeds ({kinds:?}); the first:\n{reports}",
        totals.violations,
        totals.failing_seeds.len(),
        totals.seeds,
    );
}

/// A seed is a complete description of its run: playing it twice gives the same run, so a
/// printed seed replays what failed.
#[test]
fn a_seed_replays_exactly() {
    let config = Config::default();
    for seed in [0, 1, 7, 8, 94, 362] {
        let (_, first) = run_seed(seed, &config);
        let (_, again) = run_seed(seed, &config);
        assert_eq!(
            (
                first.events,
                first.writes,
                first.faults,
                first.restarts,
                first.closure_runs,
                first.children,
                first.joins,
                first.races,
                first.refusals
            ),
            (
                again.events,
                again.writes,
                again.faults,
                again.restarts,
                again.closure_runs,
                again.children,
                again.joins,
                again.races,
                again.refusals
            ),
            "seed {seed}"
        );
        assert_eq!(first.violations, again.violations, "seed {seed}");
    }
}
