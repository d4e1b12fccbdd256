//! The bench's measurements, each interleaving its probes so that a slow patch of the machine
//! touches each alike: latencies, workerd's CPU per request, throughput under many clients,
//! the cost of a step, and responsiveness during a long run.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use durable_mcp_tests::http::Connection;
use serde_json::{Value, json};
use xtask::Result;

use super::client::{JsCall, js_call};
use super::cpu::Runtime;
use super::{Bench, CPU_PROBES, CpuCosts, CpuProbe, Latencies, Latency, Plan, Rate, Throughput};
use crate::stats::median;

impl Bench {
    /// The latencies, interleaved so that a slow patch of the machine touches each alike.
    pub(super) fn latencies(&mut self) -> Result<Latencies> {
        let id = self.create(0)?;
        self.run_to_completion(0)?;
        // What the Worker sends the object for a tasks/get, echoed by a bare object.
        let call = json!({ "op": "get", "task_id": id, "caller": null }).to_string();
        // A client's tasks/get, read by the Worker around a bare round trip and answered back
        // (about the size of the answer).
        let get_body = self
            .client
            .build("tasks/get", json!({ "taskId": id }), true)
            .0
            .to_string();
        // The JS floor's objects exist before they are timed, as the task's object does.
        for n in 0..8 {
            js_call(&mut self.js, JsCall::Ping, &format!("js-{n}"))?;
        }
        let mut samples: [Vec<Duration>; 13] = Default::default();
        for i in 0..self.plan.samples {
            let timed = |bench: &mut Bench, probe: usize| -> Result<Duration> {
                let started = Instant::now();
                match probe {
                    0 => bench.floor(&format!("/floor/ping/floor-{}", i % 8), "GET")?,
                    1 => drop(bench.mcp("server/discover", json!({}))?),
                    2 => drop(bench.get(&id)?),
                    3 => drop(bench.create(0)?),
                    4 => bench.floor(&format!("/floor/ping/fresh-{i}"), "GET")?,
                    5 => bench.floor_with(
                        &format!("/floor/echo/floor-{}", i % 8),
                        "POST",
                        call.as_bytes(),
                    )?,
                    6 => bench.floor_with(
                        &format!("/floor/read/floor-{}", i % 8),
                        "POST",
                        get_body.as_bytes(),
                    )?,
                    7 => bench.floor(&format!("/floor/insert/created-{i}?n=1&alarm=1"), "POST")?,
                    8 => js_call(&mut bench.js, JsCall::Ping, &format!("js-{}", i % 8))?,
                    9 => js_call(&mut bench.js, JsCall::Insert, &format!("js-{}", i % 8))?,
                    10 => bench.floor("/floor/none", "GET")?,
                    11 => bench.floor(&format!("/floor/rpc-ping/floor-{}", i % 8), "GET")?,
                    _ => bench.floor(&format!("/floor/rpc-sql/floor-{}", i % 8), "GET")?,
                }
                Ok(started.elapsed())
            };
            for (probe, sample) in samples.iter_mut().enumerate() {
                sample.push(timed(self, probe)?);
            }
        }
        let [
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
        ] = samples.map(Latency::of);
        Ok(Latencies {
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
        })
    }

    /// What a request of each [`CPU_PROBES`] kind costs the workerd process that runs its
    /// Worker, in CPU time: [`CPU_ROUNDS`](super::CPU_ROUNDS) rounds of [`CPU_REQUESTS`](super::CPU_REQUESTS) sequential requests of
    /// each kind in turn, summed. `None` for a kind whose process could not be read.
    pub(super) fn cpu_per_request(&mut self, rust: &Runtime, js: &Runtime) -> Result<CpuCosts> {
        let id = self.create(0)?;
        self.wait_completed(&id)?;
        let mut totals = [Some(Duration::ZERO); CPU_PROBES.len()];
        for _ in 0..self.plan.cpu_rounds {
            for ((probe, _), total) in CPU_PROBES.iter().zip(&mut totals) {
                let runtime = match probe {
                    CpuProbe::JsInsert | CpuProbe::JsPing => js,
                    _ => rust,
                };
                let before = runtime.cpu();
                for _ in 0..self.plan.cpu_requests {
                    match probe {
                        CpuProbe::Get => drop(self.get(&id)?),
                        CpuProbe::JsInsert => js_call(&mut self.js, JsCall::Insert, "cpu")?,
                        CpuProbe::JsPing => js_call(&mut self.js, JsCall::Ping, "cpu")?,
                        CpuProbe::None => self.floor("/floor/none", "GET")?,
                        CpuProbe::RpcPing => self.floor("/floor/rpc-ping/cpu", "GET")?,
                    }
                }
                let used = before
                    .zip(runtime.cpu())
                    .map(|(from, to)| to.saturating_sub(from));
                *total = total.zip(used).map(|(sum, used)| sum + used);
            }
        }
        let requests = u32::try_from(self.plan.cpu_rounds)? * self.plan.cpu_requests;
        Ok(CpuCosts(
            totals.map(|total| total.map(|total| total / requests)),
        ))
    }

    /// Requests per second under [`CLIENTS`](super::CLIENTS) concurrent clients: `tasks/get` of one completed
    /// task, the JS floor's RPC insert and its RPC ping (each into one object), in turn for
    /// [`ROUNDS`](super::ROUNDS) rounds of [`ROUND`](super::ROUND) each, so that a slow patch of the machine touches each
    /// alike.
    pub(super) fn throughput(&mut self) -> Result<Throughput> {
        let id = self.create(0)?;
        self.wait_completed(&id)?;
        let (body, headers) = self
            .client
            .build("tasks/get", json!({ "taskId": id }), true);
        let body = body.to_string();
        let headers = durable_mcp_tests::http::borrowed(&headers);
        let get = |connection: &mut Connection| -> Result<()> {
            let response = connection
                .request("POST", "/mcp", &headers, body.as_bytes())
                .map_err(|error| format!("tasks/get: {error}"))?;
            let answer: Value = serde_json::from_slice(&response.body)?;
            if answer["result"]["status"] != "completed" {
                return Err(format!("tasks/get answered {answer}").into());
            }
            Ok(())
        };
        let insert = |connection: &mut Connection| js_call(connection, JsCall::Insert, "clients");
        let ping = |connection: &mut Connection| js_call(connection, JsCall::Ping, "clients");
        let (rust, js) = (self.client.address(), self.js_address);
        let kinds: [(SocketAddr, &Request<'_>); 3] = [(rust, &get), (js, &insert), (js, &ping)];
        let mut totals = [(0, Duration::ZERO); 3];
        for _ in 0..self.plan.rounds {
            for ((address, request), total) in kinds.iter().zip(&mut totals) {
                let (done, took) = drive(*address, *request, &self.plan)?;
                total.0 += done;
                total.1 += took;
            }
        }
        // wrangler dev closes a keep-alive connection left idle for about 5 s, as the kept ones
        // were while the clients ran: open them again.
        self.connection = Connection::open(rust)?;
        self.js = Connection::open(js)?;
        let [get, js_insert, js_ping] = totals.map(|(done, took)| Rate { done, took });
        Ok(Throughput {
            get,
            js_insert,
            js_ping,
        })
    }

    /// The cost of one no-op step, and of one bare insert in an object.
    pub(super) fn per_step(&mut self) -> Result<(Duration, Duration)> {
        let Plan {
            steps: count,
            inserts,
            step_runs,
            ..
        } = self.plan;
        // One unmeasured run of each first: the first runs of a code path can be slower (V8
        // optimises hot wasm in the background, later on a busy machine); the figure is the
        // steady cost.
        self.run_to_completion(count)?;
        self.floor(
            &format!("/floor/insert/inserts-warm-up?n={inserts}"),
            "POST",
        )?;
        let (mut steps, mut per_insert) = (Vec::new(), Vec::new());
        for run in 0..step_runs {
            let none = self.run_to_completion(0)?;
            let many = self.run_to_completion(count)?;
            steps.push(many.saturating_sub(none) / u32::try_from(count)?);
            let object = format!("inserts-{run}");
            let started = Instant::now();
            self.floor(&format!("/floor/insert/{object}?n=0"), "POST")?;
            let none = started.elapsed();
            let started = Instant::now();
            self.floor(&format!("/floor/insert/{object}?n={inserts}"), "POST")?;
            per_insert.push(started.elapsed().saturating_sub(none) / u32::try_from(inserts)?);
        }
        let no_run = "no per-step run";
        Ok((
            median(steps).ok_or(no_run)?,
            median(per_insert).ok_or(no_run)?,
        ))
    }

    /// The slowest `tasks/get` answered while a task runs [`LONG_RUN`](super::LONG_RUN) steps; `None` if none
    /// was answered before the run ended (the run held every request).
    pub(super) fn slowest_get_during_long_run(&mut self) -> Result<Option<Duration>> {
        let id = self.create(self.plan.long_run)?;
        let mut slowest = Duration::ZERO;
        let mut answered_while_working = 0;
        loop {
            let started = Instant::now();
            let task = self.get(&id)?;
            let took = started.elapsed();
            match task["status"].as_str() {
                Some("working") => {
                    slowest = slowest.max(took);
                    answered_while_working += 1;
                }
                Some("completed") => break,
                _ => return Err(format!("the long run ended otherwise: {task}").into()),
            }
        }
        Ok((answered_while_working > 0).then_some(slowest))
    }
}

/// A request that one client sends back to back on its connection.
type Request<'a> = dyn Fn(&mut Connection) -> Result<()> + Sync + 'a;

/// The plan's clients, each on its own keep-alive connection to `address`, sending `request`
/// back to back for one round: the requests completed and the time until the last one was.
fn drive(address: SocketAddr, request: &Request<'_>, plan: &Plan) -> Result<(u64, Duration)> {
    let started = Instant::now();
    let deadline = started + plan.round;
    let client = || -> Result<u64, String> {
        let mut connection = Connection::open(address).map_err(|error| error.to_string())?;
        let mut done = 0;
        while Instant::now() < deadline {
            request(&mut connection).map_err(|error| error.to_string())?;
            done += 1;
        }
        Ok(done)
    };
    let done = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..plan.clients).map(|_| scope.spawn(client)).collect();
        clients
            .into_iter()
            .map(|handle| handle.join().map_err(|_| "a client panicked".to_owned())?)
            .sum::<Result<u64, String>>()
    })?;
    Ok((done, started.elapsed()))
}
