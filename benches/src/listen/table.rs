//! The listen bench's tables: delivery latency on each host against its floor, then the
//! native host's memory and CPU with many streams open. Figures only: no target is judged.

use std::time::Duration;

use crate::stats::{Ranked, mib, micros, millis, print_row, ratio, thousands};

use super::delivery::{Delivery, Samples};
use super::endpoint::Write;
use super::many_streams::ManyStreams;
use super::{Plan, SERVER};

/// Prints both tables.
pub(super) fn print(plan: &Plan, native: &Delivery, workerd: &Delivery, many: &ManyStreams) {
    println!();
    println!(
        "subscriptions/listen, delivery latency: {} writes of each kind per host, one stream \
         open on each task; from just before the write is sent to the stream's notification \
         of its change, and to the write's own HTTP response (the floor)",
        plan.samples
    );
    print_row("measurement", "p50", "p99", "", "");
    for (host, delivery) in [("native", native), ("workerd", workerd)] {
        for (write, samples) in Write::ALL.iter().zip(&delivery.0) {
            print_delivery(host, *write, samples);
        }
    }
    print_many(plan, many);
    if !plan.release {
        println!("(a smoke run: a few samples and streams on a debug build; nothing is judged)");
    }
}

/// The rows of one write kind on one host.
fn print_delivery(host: &str, write: Write, samples: &Samples) {
    let percentiles = |samples: &[Duration]| {
        let ranked = Ranked::lowest_first(samples.to_vec());
        [0.5, 0.99].map(|q| ranked.percentile(q).unwrap_or_default())
    };
    let notified = percentiles(&samples.notified);
    let answered = percentiles(&samples.answered);
    let method = write.method();
    print_row(
        &format!("{host} {method}: notified"),
        &millis(notified[0]),
        &millis(notified[1]),
        "",
        "",
    );
    print_row(
        &format!("{host} {method}: response"),
        &millis(answered[0]),
        &millis(answered[1]),
        "",
        "",
    );
    let times = |i: usize| format!("{:.2}x", ratio(notified[i], answered[i]));
    print_row("  notified / response", &times(0), &times(1), "", "");
}

/// The many-streams rows.
fn print_many(plan: &Plan, many: &ManyStreams) {
    let streams = plan.streams;
    println!();
    println!(
        "subscriptions/listen, {} {SERVER}: {streams} streams open at once, each following one \
         watched_errand waiting for input",
        if plan.release { "release" } else { "debug" },
    );
    print_row("host memory", "VmRSS", "", "", "");
    print_row(
        "tasks waiting, no stream open",
        &mib(many.rss_before_kib),
        "",
        "",
        "",
    );
    print_row(
        &format!("{streams} streams open"),
        &mib(many.rss_after_kib),
        "",
        "",
        "",
    );
    #[allow(clippy::cast_precision_loss)] // KiB of a process, far below 2^52
    let per_stream =
        (many.rss_after_kib as f64 - many.rss_before_kib as f64) / streams.max(1) as f64;
    print_row("  per stream", &format!("{per_stream:.1} KiB"), "", "", "");
    println!();
    println!(
        "host CPU time per change (tasks/update answering a waiting watched_errand, which then \
         completes): {} changes of each kind, one at a time, /proc's 10 ms ticks summed",
        thousands(many.changes as u64)
    );
    print_row("measurement", "CPU", "", "", "");
    print_row("no stream open", &micros(many.cpu_none), "", "", "");
    print_row(
        &format!("{streams} open, none follows it"),
        &micros(many.cpu_unfollowed),
        "",
        "",
        "",
    );
    print_row(
        &format!("{streams} open, one follows it"),
        &micros(many.cpu_followed),
        "",
        "",
        "",
    );
}
