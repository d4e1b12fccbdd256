//! Delivery latency on one host: how long after a write a listen stream shows the change it
//! made, beside how long the write's own HTTP response took, both from the same instant.
//!
//! Every task is created first (a `watched_errand` and a `slow_compute` in turn, so that each
//! has come to rest long before it is measured). Then, for each in turn: a stream is opened
//! on it alone and read until the task rests (`input_required`, or `working` for the sleeping
//! `slow_compute`); a reader thread blocks on the stream; the instant before the write is sent
//! on the kept connection is the start, the write's response and the stream's next message
//! (the change, since nothing else changes a resting task) are each stamped as they arrive.
//! The stream is then read to its end (the task has ended) before the next task, so that no
//! sample overlaps the last one's work. The first [`WARM_UP`] of each kind are not counted.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use durable_mcp_tests::listen::Listen;
use xtask::Result;

use super::endpoint::{Endpoint, Write};
use super::stream;

/// The samples of one write kind.
#[derive(Debug, Default)]
pub(super) struct Samples {
    /// From just before the write was sent to the stream's notification of its change.
    pub(super) notified: Vec<Duration>,
    /// From the same instant to the write's own HTTP response: the floor.
    pub(super) answered: Vec<Duration>,
}

/// The samples of each write, in [`Write::ALL`]'s order.
#[derive(Debug, Default)]
pub(super) struct Delivery(pub(super) [Samples; 2]);

/// Writes of each kind made first and not counted: the first of a path can be slower (a
/// Worker's isolate and objects warming up), and the figures are about the steady state.
const WARM_UP: usize = 2;

/// Measures `samples` writes of each kind at the endpoint `url`.
pub(super) fn measure(url: &str, samples: usize) -> Result<Delivery> {
    let mut endpoint = Endpoint::open(url)?;
    let mut tasks = Vec::with_capacity((WARM_UP + samples) * Write::ALL.len());
    for _ in 0..WARM_UP + samples {
        for write in Write::ALL {
            tasks.push((write, endpoint.create(write)?));
        }
    }
    let mut delivery = Delivery::default();
    for (n, (write, id)) in tasks.iter().enumerate() {
        let mut listen = stream::open(endpoint.client(), &[id])?;
        stream::until_status(&mut listen, write.resting())?;
        endpoint.keep_fresh()?;
        let (notified, answered) = timed(&mut endpoint, &mut listen, *write, id)?;
        stream::to_end(&mut listen)?;
        if n < WARM_UP * Write::ALL.len() {
            continue;
        }
        let kind = Write::ALL.iter().position(|w| w == write).unwrap_or(0);
        delivery.0[kind].notified.push(notified);
        delivery.0[kind].answered.push(answered);
    }
    Ok(delivery)
}

/// Makes `write` on task `id`, which `listen` follows and which rests: the time to the
/// stream's notification of the change, and to the write's response.
fn timed(
    endpoint: &mut Endpoint,
    listen: &mut Listen,
    write: Write,
    id: &str,
) -> Result<(Duration, Duration)> {
    let (ready, reading) = mpsc::channel();
    std::thread::scope(|scope| {
        // The reader blocks on the stream before the write starts, so that it stamps the
        // notification as it arrives, whether before or after the response.
        let reader = scope.spawn(move || {
            let _ = ready.send(());
            let task = stream::task(listen);
            (Instant::now(), task.map_err(|error| error.to_string()))
        });
        reading
            .recv()
            .map_err(|_| "the stream's reader did not start")?;
        let started = Instant::now();
        let answer = endpoint.call(write.method(), write.params(id));
        let answered = started.elapsed();
        let (notified_at, task) = reader.join().map_err(|_| "the stream's reader panicked")?;
        answer?;
        let task = task?;
        // An answered question shows at once: the task leaves input_required.
        let unchanged = write == Write::Update && task["status"] == write.resting();
        if task["taskId"] != id || unchanged {
            return Err(format!("after {} of {id} the stream sent {task}", write.method()).into());
        }
        Ok((notified_at - started, answered))
    })
}
