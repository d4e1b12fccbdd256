//! Phase 2: `tasks/get` of random unfinished tasks on a few keep-alive connections, each
//! request timed, until every task has ended.
//!
//! Two kinds of client poll. The pollers send their next request as soon as the last is
//! answered, so that every task is seen ended soon after it ends; but then a host that stalls
//! for seconds is asked only once per poller meanwhile, and their percentiles hide the stall
//! (coordinated omission). The pacer asks on a fixed schedule instead, one request every
//! [`Pacing::every`] on a connection of its own, and times each from when the schedule meant to
//! send it: a stall delays every request scheduled during it, and each counts.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::create::Created;
use crate::http::Connection;
use crate::mcp::McpClient;
use crate::report_api::report_for;

/// How often the drain's progress is printed, when asked for.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// What the pollers saw.
#[derive(Debug, Default)]
pub(super) struct Drained {
    /// The latency of every `tasks/get` the pollers had answered, in nanoseconds.
    pub(super) latencies: Vec<u64>,
    /// The latency of every `tasks/get` the pacer had answered, from when it was scheduled, in
    /// nanoseconds.
    pub(super) paced: Vec<u64>,
    /// The worst latency, and when its request was sent.
    pub(super) worst: Option<(Duration, Instant)>,
    /// Requests that failed (a broken connection, an HTTP error, an error response).
    pub(super) errors: usize,
    /// The first of them, described.
    pub(super) first_error: Option<String>,
    /// Tasks seen `completed` with the expected result.
    pub(super) completed: usize,
    /// Tasks that ended otherwise, or completed with another result: their index, described.
    pub(super) otherwise: Vec<(usize, String)>,
    /// When the last unfinished task was seen ended; `None` if some never were.
    pub(super) all_ended_at: Option<Instant>,
    /// Tasks not seen ended when the drain stopped.
    pub(super) unfinished: usize,
}

/// The tasks not seen ended yet: a set that yields a random member and forgets one in O(1).
struct Pending {
    /// Indices of unfinished tasks, in no order.
    left: Vec<usize>,
    /// Where each task's index is in `left`; `usize::MAX` once it has ended.
    position: Vec<usize>,
}

impl Pending {
    fn all(count: usize) -> Pending {
        Pending {
            left: (0..count).collect(),
            position: (0..count).collect(),
        }
    }

    /// The unfinished task that `random` picks, if any is left.
    fn pick(&self, random: u64) -> Option<usize> {
        let len = u64::try_from(self.left.len()).ok().filter(|&len| len > 0)?;
        self.left.get(usize::try_from(random % len).ok()?).copied()
    }

    /// Forgets task `index`; whether it was still unfinished.
    fn end(&mut self, index: usize) -> bool {
        let at = std::mem::replace(&mut self.position[index], usize::MAX);
        if at == usize::MAX {
            return false;
        }
        self.left.swap_remove(at);
        if let Some(&moved) = self.left.get(at) {
            self.position[moved] = at;
        }
        true
    }
}

/// What the pollers share.
struct Board {
    tasks: Vec<Created>,
    pending: Mutex<Pending>,
    /// Set when every task has ended or the limit has passed.
    stop: AtomicBool,
    /// Answered requests so far, for the progress lines.
    polls: AtomicU64,
    /// The worst latency since the last progress line, in nanoseconds.
    window_worst: AtomicU64,
}

/// The pacer's schedule.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pacing {
    /// The time between two scheduled requests.
    pub(super) every: Duration,
}

/// Polls until every task of `tasks` has ended or `limit` has passed since `since`. Prints a
/// progress line every few seconds if `progress` says what else to show in it.
pub(super) fn drain(
    address: SocketAddr,
    tasks: &[Created],
    pollers: usize,
    pacing: Pacing,
    since: Instant,
    limit: Duration,
    progress: Option<&dyn Fn() -> String>,
) -> Drained {
    let board = Arc::new(Board {
        tasks: tasks.to_vec(),
        pending: Mutex::new(Pending::all(tasks.len())),
        stop: AtomicBool::new(false),
        polls: AtomicU64::new(0),
        window_worst: AtomicU64::new(0),
    });
    let threads: Vec<_> = (0..pollers.max(1))
        .map(|poller| {
            let board = Arc::clone(&board);
            std::thread::spawn(move || poll(address, &board, poller as u64))
        })
        .collect();
    let pacer = {
        let board = Arc::clone(&board);
        std::thread::spawn(move || pace(address, &board, pacing))
    };
    // Until every task has ended or the time is up: the pollers stop either way, and the
    // figures count the tasks left.
    let mut printed = Instant::now();
    let time_left = limit.saturating_sub(since.elapsed());
    crate::wait::within(time_left, Duration::from_millis(100), || {
        let left = board.pending.lock().unwrap().left.len();
        if left == 0 {
            return Some(());
        }
        if let Some(extra) = progress
            && printed.elapsed() >= PROGRESS_EVERY
        {
            printed = Instant::now();
            let worst = Duration::from_nanos(board.window_worst.swap(0, Ordering::Relaxed));
            eprintln!(
                "backlog: {:>6.1} s after the restart: {} of {} tasks ended, {} tasks/get \
                 answered, worst latency of the last {} s {:.0} ms; {}",
                since.elapsed().as_secs_f64(),
                tasks.len() - left,
                tasks.len(),
                board.polls.load(Ordering::Relaxed),
                PROGRESS_EVERY.as_secs(),
                worst.as_secs_f64() * 1e3,
                extra()
            );
        }
        None
    });
    board.stop.store(true, Ordering::Relaxed);
    let mut drained = Drained::default();
    for thread in threads {
        let Ok(seen) = thread.join() else {
            failed(&mut drained, "a polling thread panicked".to_owned());
            continue;
        };
        drained.latencies.extend(seen.latencies);
        drained.worst = drained.worst.max(seen.worst);
        drained.errors += seen.errors;
        if drained.first_error.is_none() {
            drained.first_error = seen.first_error;
        }
        drained.completed += seen.completed;
        drained.otherwise.extend(seen.otherwise);
        drained.all_ended_at = drained.all_ended_at.max(seen.all_ended_at);
    }
    match pacer.join() {
        Ok(seen) => {
            drained.paced = seen.paced;
            drained.errors += seen.errors;
            if drained.first_error.is_none() {
                drained.first_error = seen.first_error;
            }
        }
        Err(_) => failed(&mut drained, "the pacing thread panicked".to_owned()),
    }
    drained.unfinished = board.pending.lock().unwrap().left.len();
    if drained.unfinished > 0 {
        drained.all_ended_at = None;
    }
    drained
}

/// One poller: a keep-alive connection (opened again if it breaks) and random unfinished
/// tasks, one request at a time, until the board says stop or no task is left.
fn poll(address: SocketAddr, board: &Board, seed: u64) -> Drained {
    let mut asker = Asker::new(address, seed);
    let mut seen = Drained::default();
    while !board.stop.load(Ordering::Relaxed) {
        let Some(index) = board.pending.lock().unwrap().pick(asker.random.next()) else {
            break;
        };
        let sent = Instant::now();
        let Some(result) = asker.get(board, index, &mut seen) else {
            continue;
        };
        let latency = sent.elapsed();
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        seen.latencies.push(nanos);
        seen.worst = seen.worst.max(Some((latency, sent)));
        board.polls.fetch_add(1, Ordering::Relaxed);
        board.window_worst.fetch_max(nanos, Ordering::Relaxed);
        match result["status"].as_str() {
            Some("working") => {}
            Some("completed" | "failed" | "cancelled") => {
                if board.pending.lock().unwrap().end(index) {
                    seen.all_ended_at = Some(Instant::now());
                    match check_result(&board.tasks[index], &result) {
                        Ok(()) => seen.completed += 1,
                        Err(ended) => seen.otherwise.push((index, ended)),
                    }
                }
            }
            _ => failed(&mut seen, format!("tasks/get: {result}")),
        }
    }
    seen
}

/// The pacer: `tasks/get` of a random unfinished task every `pacing.every`, each timed from
/// when it was scheduled, until the board says stop. What it saw is in `paced` and the errors.
fn pace(address: SocketAddr, board: &Board, pacing: Pacing) -> Drained {
    let mut asker = Asker::new(address, u64::MAX);
    let mut seen = Drained::default();
    let mut next = Instant::now();
    while !board.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        let scheduled = next;
        next += pacing.every;
        let Some(index) = board.pending.lock().unwrap().pick(asker.random.next()) else {
            break;
        };
        if asker.get(board, index, &mut seen).is_some() {
            let latency = scheduled.elapsed();
            seen.paced
                .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
        }
    }
    seen
}

/// A client of the endpoint on one keep-alive connection, opened again when it breaks.
struct Asker {
    address: SocketAddr,
    client: McpClient,
    connection: Option<Connection>,
    random: Random,
}

impl Asker {
    fn new(address: SocketAddr, seed: u64) -> Asker {
        Asker {
            address,
            client: McpClient::new(&format!("http://{address}/mcp")),
            connection: None,
            random: Random(0x5eed ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        }
    }

    /// `tasks/get` of task `index`: its result, or `None` after counting a failure in `seen`.
    fn get(&mut self, board: &Board, index: usize, seen: &mut Drained) -> Option<Value> {
        let task = &board.tasks[index];
        let open = match self.connection.take() {
            Some(open) => Ok(open),
            None => Connection::open(self.address),
        };
        let mut open = match open {
            Ok(open) => open,
            Err(error) => {
                failed(seen, format!("cannot connect: {error}"));
                // A back-off, not a wait: the failure is counted, and the poller goes on.
                std::thread::sleep(Duration::from_millis(10));
                return None;
            }
        };
        let (body, headers) = self
            .client
            .build("tasks/get", json!({ "taskId": task.id }), true);
        let headers = crate::http::borrowed(&headers);
        let response = match open.request("POST", "/mcp", &headers, body.to_string().as_bytes()) {
            Ok(response) => response,
            Err(error) => {
                failed(seen, format!("tasks/get of {}: {error}", task.id));
                return None;
            }
        };
        self.connection = Some(open);
        let mut answer: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        let result = answer["result"].take();
        if response.status != 200 || result["taskId"] != task.id.as_str() {
            failed(
                seen,
                format!(
                    "tasks/get of {}: HTTP {} {}",
                    task.id,
                    response.status,
                    String::from_utf8_lossy(&response.body)
                ),
            );
            return None;
        }
        Some(result)
    }
}

/// Counts a failed request, keeping the first description.
fn failed(seen: &mut Drained, description: String) {
    seen.errors += 1;
    seen.first_error.get_or_insert(description);
}

/// Whether an ended task completed with the result its tool answers on success; if not, how
/// it ended.
fn check_result(task: &Created, result: &Value) -> Result<(), String> {
    let title = report_for(&task.to)["title"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let expected = format!("report {title:?} sent to {}", task.to);
    let status = result["status"].as_str().unwrap_or_default();
    let text = result["result"]["content"][0]["text"].as_str();
    let error = result["result"].get("isError").is_some();
    if status == "completed" && text == Some(expected.as_str()) && !error {
        return Ok(());
    }
    let said = text
        .or(result["statusMessage"].as_str())
        .unwrap_or_default();
    Err(format!(
        "ended {status}{}: {said}",
        if error { " with a tool error" } else { "" }
    ))
}

/// splitmix64: enough randomness to pick tasks, reproducible from its seed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::Pending;

    #[test]
    fn pending_tasks_end_once_each_and_are_picked_until_none_is_left() {
        let mut pending = Pending::all(5);
        assert!(pending.end(1));
        assert!(!pending.end(1), "a task ends once");
        assert!(pending.end(4));
        let mut picked: Vec<usize> = (0..100).filter_map(|r| pending.pick(r)).collect();
        picked.sort_unstable();
        picked.dedup();
        assert_eq!(picked, [0, 2, 3]);
        for index in [0, 2, 3] {
            assert!(pending.end(index));
        }
        assert_eq!(pending.pick(7), None);
    }
}
