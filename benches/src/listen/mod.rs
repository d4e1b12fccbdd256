//! `cargo xtask bench listen`, a part of `cargo xtask bench`: push over
//! `subscriptions/listen`, on both hosts.
//!
//! - **Delivery latency** (the `delivery` module), natively (`conformance-server`) and on the
//!   Cloudflare host under workerd (the bench Worker, `benches/worker`, built and started as
//!   `bench worker` does): for [`SAMPLES`] tasks of each kind, a stream open on the task, the
//!   time from just before the client sends the write that changes it (`tasks/update` of a
//!   `watched_errand` waiting for input, `tasks/cancel` of a sleeping `slow_compute`) to the
//!   arrival on the stream of the notification showing the change; beside it the floor, from
//!   the same instant to that write's own HTTP response. p50 and p99 of both, and their ratio.
//! - **Many open streams** (the `many_streams` module), natively: the host's RSS before and
//!   after opening [`STREAMS`] streams (each following one task), and its CPU time per change
//!   with them open and with none.
//!
//! The native host holds at most half its connections as streams (128 of 256 by default):
//! the many-streams measurement raises both through their settings
//! ([`MANY_STREAMS_SETTINGS`]) so that [`STREAMS`] fit.
//!
//! Figures are printed, never judged. A smoke run ([`Scale::Smoke`]) takes a few samples and
//! streams on the debug build and the tests' Worker build.

mod delivery;
mod endpoint;
mod many_streams;
mod store;
mod stream;
mod table;

use durable_mcp::settings::{MAX_CONNECTIONS_VAR, MAX_STREAMS_VAR};
use xtask::Result;
use xtask::process::{Profile, build_binary, workspace_root};
use xtask::{worker_target, worker_tools};

use crate::native::start_server;
use crate::scale::Scale;

/// The package and binary of the native server measured.
const SERVER: &str = "conformance-server";

/// Samples of each write kind, on each host.
const SAMPLES: usize = 500;

/// The streams the many-streams measurement opens.
const STREAMS: usize = 1_000;

/// The native host's settings for the many-streams measurement: room for [`STREAMS`] streams
/// (at most half the connections) beside the bench's own requests.
const MANY_STREAMS_SETTINGS: [(&str, &str); 2] =
    [(MAX_STREAMS_VAR, "1024"), (MAX_CONNECTIONS_VAR, "2100")];

/// Rounds of the many-streams measurement: each makes [`STREAMS`] changes of each kind, enough
/// that the CPU clock's 10 ms tick is small beside their sum.
const ROUNDS: usize = 10;

/// What the listen bench does at a scale.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Samples of each write kind, on each host.
    samples: usize,
    /// Streams open at once in the many-streams measurement.
    streams: usize,
    /// Its rounds.
    rounds: usize,
    /// Whether the native server is built in release.
    release: bool,
}

impl Plan {
    fn of(scale: Scale) -> Plan {
        match scale {
            Scale::Full => Plan {
                samples: SAMPLES,
                streams: STREAMS,
                rounds: ROUNDS,
                release: true,
            },
            Scale::Smoke => Plan {
                samples: 3,
                streams: 5,
                rounds: 1,
                release: false,
            },
        }
    }
}

/// Measures delivery on both hosts, then many streams natively; prints the tables.
pub fn run(scale: Scale) -> Result<()> {
    let plan = Plan::of(scale);
    let profile = if plan.release {
        Profile::Release
    } else {
        Profile::Debug
    };
    let binary = build_binary(SERVER, profile)?;
    eprintln!("bench: listen delivery, natively");
    let native = {
        let server = start_server(&binary, None, &[])?;
        delivery::measure(server.url(), plan.samples)?
    };
    eprintln!("bench: listen delivery, in the bench Worker under wrangler dev");
    worker_tools::ensure()?;
    let workerd = {
        let worker = worker_target::start(&workspace_root(), crate::worker::BENCH_WORKER)?;
        delivery::measure(&worker.mcp_url(), plan.samples)?
    };
    eprintln!(
        "bench: {} listen streams open on the native host",
        plan.streams
    );
    let many = many_streams::measure(&binary, plan.streams, plan.rounds)?;
    table::print(&plan, &native, &workerd, &many);
    Ok(())
}
