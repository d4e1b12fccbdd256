//! The backlog scenario of the native host, shared by `tests/tests/native_backlog.rs` (which
//! checks that every task finishes exactly once) and `cargo xtask bench backlog` (which shows
//! the figures against their targets).
//!
//! A host with a backlog of due tasks whose steps call a slow upstream is SIGKILLed and
//! started again on the same state directory:
//!
//! 1. The `report-task` server starts with its report service ([`FakeReportService`]) holding
//!    every `GET /data` ([`FetchDelay::Hold`]), and [`BacklogPlan::tasks`] `send_report` tasks
//!    are created through the MCP endpoint over [`BacklogPlan::creators`] keep-alive
//!    connections, each `tools/call` declaring the Tasks extension (so it answers with a task
//!    at once), each task with a recipient of its own. As soon as the last is created, the
//!    server is SIGKILLed: no task has got past its fetch, so all of them are due.
//! 2. The service now answers each fetch after a delay in [`BacklogPlan::fetch_delay`]
//!    (50-600 ms), and the server starts again on the same port and directory. From just
//!    before the spawn, a client sends `tasks/get` of a created task in a tight loop until one
//!    is answered; then [`BacklogPlan::pollers`] keep-alive connections poll `tasks/get` of
//!    random unfinished tasks, each as soon as its last request is answered, timing every
//!    request, until every task has ended. Beside them, one more connection asks on a fixed
//!    schedule ([`BacklogPlan::pace`]) and times each request from when it was scheduled, so
//!    that a stall counts once for every request it held up, not once per poller.
//! 3. Exactly once ([`ExactlyOnce`]): every task `completed` with the text its tool answers
//!    on success; the service accepted a send for every recipient, and every send of it
//!    carried that task's one idempotency key; every recipient was fetched.
//!
//! The first phase has a budget: the example's fetch step times out after 10 s and has five
//! attempts, so a held fetch that outlives it is tried again and its attempt is spent. A host
//! that creates the backlog within 10 s spends none; one that needs a minute or more fails its
//! earliest tasks before the kill. [`BacklogFigures::retried_before_kill`] counts the tasks
//! that spent an attempt so.
//!
//! `REPORT_COOL_OFF` is `0ms`, so a task is a fetch then a send. The server gets
//! [`BacklogPlan::env`] on top of this process's environment, so host settings such as
//! [`HOST_TUNING`] reach it either way.

mod create;
mod drain;
mod host;
mod verify;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use verify::ExactlyOnce;

use crate::report_api::{FakeReportService, FetchDelay};
use host::Host;

/// The workspace binary the scenario runs.
pub const BINARY: &str = "report-task";

/// Host settings a run may pass to the server; [`BacklogPlan::tuning_from_env`] copies those
/// set in this process.
pub const HOST_TUNING: [&str; 3] = [
    "DURABLE_MCP_WORKERS",
    "DURABLE_MCP_MAX_ACTIVATIONS",
    "DURABLE_MCP_MAX_WAITING",
];

/// The example's cool-off between fetching and sending: none, so a task is fetch then send.
const COOL_OFF: &str = "0ms";

/// What a run does.
#[derive(Clone, Debug)]
pub struct BacklogPlan {
    /// The server's executable: a build of [`BINARY`].
    pub binary: PathBuf,
    /// Tasks in the backlog (at least one).
    pub tasks: usize,
    /// Keep-alive connections (a thread each) that create the tasks.
    pub creators: usize,
    /// Keep-alive connections (a thread each) that poll `tasks/get` while the backlog drains,
    /// each as soon as its last request is answered.
    pub pollers: usize,
    /// The time between two requests of the connection that polls on a fixed schedule.
    pub pace: Duration,
    /// Environment variables for the server, both starts, on top of this process's.
    pub env: Vec<(String, String)>,
    /// The bounds of each fetch's delay after the restart.
    pub fetch_delay: (Duration, Duration),
    /// How long after the restart the backlog may take to drain before the run fails.
    pub drain_limit: Duration,
    /// Whether to print a progress line every few seconds while draining (to stderr).
    pub progress: bool,
}

impl BacklogPlan {
    /// `tasks` tasks on `binary`: 16 creating and 4 polling connections, one more polling
    /// every 10 ms, fetches of 50-600 ms, 10 minutes to drain, no progress lines.
    pub fn new(binary: impl Into<PathBuf>, tasks: usize) -> Self {
        BacklogPlan {
            binary: binary.into(),
            tasks,
            creators: 16,
            pollers: 4,
            pace: Duration::from_millis(10),
            // The first phase holds every fetch, so nothing drains while the backlog is made:
            // the host must let every task wait rather than refuse the last ones with 503.
            env: vec![(
                "DURABLE_MCP_MAX_WAITING".to_owned(),
                (tasks + 1).to_string(),
            )],
            fetch_delay: (Duration::from_millis(50), Duration::from_millis(600)),
            drain_limit: Duration::from_secs(600),
            progress: false,
        }
    }

    /// Adds `name=value` to the server's environment.
    #[must_use]
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds each of [`HOST_TUNING`] set in this process to the server's environment (where it
    /// would arrive anyway), so that [`BacklogPlan::env`] shows what the run was given.
    #[must_use]
    pub fn tuning_from_env(mut self) -> Self {
        for name in HOST_TUNING {
            if let Ok(value) = std::env::var(name) {
                self = self.env(name, &value);
            }
        }
        self
    }
}

/// Latencies of the `tasks/get` requests answered while the backlog drained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latency {
    /// Requests answered.
    pub count: usize,
    /// The median (nearest rank).
    pub p50: Duration,
    /// The 99th percentile (nearest rank).
    pub p99: Duration,
    /// The slowest.
    pub max: Duration,
}

impl Latency {
    /// The figures of `nanos`, latencies in nanoseconds.
    fn of(mut nanos: Vec<u64>) -> Latency {
        nanos.sort_unstable();
        let at = |fraction: f64| {
            let last = nanos.len().saturating_sub(1);
            #[allow(clippy::cast_precision_loss, clippy::cast_sign_loss)] // a rank below len
            #[allow(clippy::cast_possible_truncation)]
            let rank = (last as f64 * fraction).round() as usize;
            Duration::from_nanos(nanos.get(rank).copied().unwrap_or(0))
        };
        Latency {
            count: nanos.len(),
            p50: at(0.5),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// What a run measured. Times "after the restart" count from just before the second spawn.
#[derive(Clone, Debug)]
pub struct BacklogFigures {
    /// Tasks in the backlog.
    pub tasks: usize,
    /// Phase 1: from the first `tools/call` until the last was answered.
    pub created_in: Duration,
    /// Phase 1: `tools/call`s the host refused as busy (HTTP 429 or 503) and that were sent
    /// again.
    pub busy_refusals: usize,
    /// Phase 1: fetches the service had received (and held) when the server was killed.
    pub fetched_before_kill: usize,
    /// Phase 1: tasks fetched more than once before the kill: their held fetch timed out, and
    /// the attempt it used is gone after the restart too.
    pub retried_before_kill: usize,
    /// From the restart until the server printed its URL.
    pub to_url_line: Duration,
    /// From the restart until the first `tasks/get` was answered.
    pub to_first_answer: Duration,
    /// `tasks/get` while the backlog drained, each sent as soon as its poller's last one was
    /// answered, timed from when it was sent.
    pub latency: Latency,
    /// `tasks/get` while the backlog drained, sent on a fixed schedule
    /// ([`BacklogPlan::pace`]), timed from when it was scheduled.
    pub paced: Latency,
    /// When the slowest of those was sent, after the restart.
    pub slowest_sent_at: Option<Duration>,
    /// `tasks/get` requests that failed while draining (not counted in [`latency`](Self::latency)).
    pub poll_errors: usize,
    /// The first of them, described.
    pub first_poll_error: Option<String>,
    /// From the first answer until every task was seen ended.
    pub drain: Duration,
    /// From the restart until every task was seen ended.
    pub to_all_ended: Duration,
    /// From the restart until the service accepted its last send.
    pub to_last_send: Option<Duration>,
    /// The restarted host's peak resident memory (`VmHWM`), when it could be read.
    pub host_peak_rss_kib: Option<u64>,
    /// The CPU time the restarted host used until every task ended, when it could be read.
    pub host_cpu: Option<Duration>,
    /// The verdict.
    pub exactly_once: ExactlyOnce,
}

impl fmt::Display for BacklogFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
        let s = |d: Duration| format!("{:.2} s", d.as_secs_f64());
        let (latency, paced) = (self.latency, self.paced);
        writeln!(f, "backlog of {} tasks:", self.tasks)?;
        writeln!(
            f,
            "  phase 1: created in {} ({} busy refusals), {} fetches held at the kill, {} tasks \
             fetched more than once by then",
            s(self.created_in),
            self.busy_refusals,
            self.fetched_before_kill,
            self.retried_before_kill
        )?;
        writeln!(
            f,
            "  restart: URL line after {}, first answer after {}",
            ms(self.to_url_line),
            ms(self.to_first_answer)
        )?;
        writeln!(
            f,
            "  tasks/get while draining: {} answered, p50 {}, p99 {}, max {} (sent {} after \
             the restart), {} failed{}",
            latency.count,
            ms(latency.p50),
            ms(latency.p99),
            ms(latency.max),
            self.slowest_sent_at.map_or("?".to_owned(), s),
            self.poll_errors,
            self.first_poll_error
                .as_ref()
                .map_or(String::new(), |e| format!(" (first: {e})"))
        )?;
        writeln!(
            f,
            "  tasks/get on a schedule while draining: {} answered, p50 {}, p99 {}, max {} \
             (from when each was scheduled)",
            paced.count,
            ms(paced.p50),
            ms(paced.p99),
            ms(paced.max)
        )?;
        writeln!(
            f,
            "  drained in {} after the first answer; all ended {} after the restart, last send \
             accepted after {}",
            s(self.drain),
            s(self.to_all_ended),
            self.to_last_send.map_or("?".to_owned(), s)
        )?;
        writeln!(
            f,
            "  host after the restart: peak RSS {}, CPU {}",
            self.host_peak_rss_kib.map_or("?".to_owned(), |kib| format!(
                "{:.1} MiB",
                kib as f64 / 1024.0
            )),
            self.host_cpu.map_or("?".to_owned(), s)
        )?;
        write!(f, "  exactly once: {}", self.exactly_once)
    }
}

/// The host's CPU time and peak memory so far, for a progress line.
fn usage_line(pid: u32) -> String {
    host::usage(pid).map_or(String::new(), |(kib, cpu)| {
        format!(
            ", host CPU {:.1} s, peak RSS {:.0} MiB",
            cpu.as_secs_f64(),
            kib as f64 / 1024.0
        )
    })
}

/// Waits until the service has closed every connection.
fn wait_closed(service: &FakeReportService) -> Result<(), String> {
    let closed = || (service.open_connections() == 0).then_some(());
    crate::wait::within(crate::wait::LIMIT, crate::wait::INTERVAL, closed).ok_or_else(|| {
        format!(
            "the report service still has {} connections open {:?} after the kill",
            service.open_connections(),
            crate::wait::LIMIT
        )
    })
}

/// Runs the scenario with its state in `data_dir` (fresh, removed by the caller).
///
/// # Errors
///
/// A server that does not start or answer, a task that cannot be created, a send before the
/// kill (the first phase must finish nothing), or a backlog that does not drain within
/// [`BacklogPlan::drain_limit`]. A broken exactly-once is no error: it is in the figures.
pub fn run(plan: &BacklogPlan, data_dir: &Path) -> Result<BacklogFigures, String> {
    if plan.tasks == 0 {
        return Err("a backlog needs at least one task".to_owned());
    }
    let service = FakeReportService::start();
    let mut env = vec![
        ("REPORT_API_URL".to_owned(), service.url()),
        ("REPORT_COOL_OFF".to_owned(), COOL_OFF.to_owned()),
    ];
    env.extend(plan.env.iter().cloned());
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, host::free_port()?));

    // Phase 1: nothing gets past its fetch.
    service.set_fetch_delay(FetchDelay::Hold);
    let mut first = Host::spawn(&plan.binary, data_dir, address, &env)?;
    first.wait_url_line()?;
    let pid = first.pid();
    let progress = || {
        format!(
            "{} fetches ({} held), {} sends{}",
            service.all_fetches(),
            service.held_fetches(),
            service.send_count(),
            usage_line(pid)
        )
    };
    let started = Instant::now();
    let (tasks, busy_refusals) = create::create_all(
        &first.url(),
        address,
        plan.tasks,
        plan.creators,
        plan.progress.then_some(&progress as &dyn Fn() -> String),
    )?;
    let created_in = started.elapsed();
    let fetched_before_kill = service.all_fetches();
    first.kill();
    let retried_before_kill = service.fetch_counts().values().filter(|&&n| n > 1).count();
    let early = service.send_count();
    if early > 0 {
        return Err(format!(
            "{early} sends before the kill: the held fetches should have let none through"
        ));
    }
    // The kill closed the host's side of the held fetches: answer them now (into closed
    // sockets), so that the service's descriptors are free before the restart.
    service.set_fetch_delay(FetchDelay::None);
    wait_closed(&service)?;

    // Phase 2: the restart, on the same port and directory.
    let (low, high) = plan.fetch_delay;
    service.set_fetch_delay(FetchDelay::Range(low, high));
    let mut host = Host::spawn(&plan.binary, data_dir, address, &env)?;
    let since = host.spawned_at;
    let to_first_answer = host.first_answer(&tasks[0].id)?;
    let to_url_line = host.wait_url_line()?;
    let pid = host.pid();
    let progress = || {
        format!(
            "{} fetches, {} sends{}",
            service.all_fetches(),
            service.send_count(),
            usage_line(pid)
        )
    };
    let drained = drain::drain(
        address,
        &tasks,
        plan.pollers,
        drain::Pacing { every: plan.pace },
        since,
        plan.drain_limit,
        plan.progress.then_some(&progress as &dyn Fn() -> String),
    );
    let usage = host::usage(pid);
    let Some(all_ended_at) = drained.all_ended_at else {
        return Err(format!(
            "{} of {} tasks had not ended {} s after the restart ({} completed, {} tasks/get \
             answered, {} failed{})",
            drained.unfinished,
            tasks.len(),
            plan.drain_limit.as_secs(),
            drained.completed,
            drained.latencies.len(),
            drained.errors,
            drained
                .first_error
                .map_or(String::new(), |e| format!(", the first: {e}"))
        ));
    };
    drop(host);
    let to_last_send = service
        .all_sends()
        .iter()
        .filter(|send| send.status == 200)
        .map(|send| send.at.saturating_duration_since(since))
        .max();
    let exactly_once = verify::check(&service, &tasks, drained.completed, &drained.otherwise);
    Ok(BacklogFigures {
        tasks: tasks.len(),
        created_in,
        busy_refusals,
        fetched_before_kill,
        retried_before_kill,
        to_url_line,
        to_first_answer,
        latency: Latency::of(drained.latencies),
        paced: Latency::of(drained.paced),
        slowest_sent_at: drained
            .worst
            .map(|(_, sent)| sent.saturating_duration_since(since)),
        poll_errors: drained.errors,
        first_poll_error: drained.first_error,
        drain: all_ended_at.saturating_duration_since(since + to_first_answer),
        to_all_ended: all_ended_at.saturating_duration_since(since),
        to_last_send,
        host_peak_rss_kib: usage.map(|(kib, _)| kib),
        host_cpu: usage.map(|(_, cpu)| cpu),
        exactly_once,
    })
}
