//! What MCP authorization costs per request, the last part of `cargo xtask bench`.
//!
//! On each host, two copies of the conformance fixture side by side: one without
//! authorization, one with it turned on by its settings (`DURABLE_MCP_OAUTH_ISSUER`,
//! `DURABLE_MCP_OAUTH_RESOURCE`) in front of a stand-in issuer on 127.0.0.1
//! (`durable_mcp_tests::issuer`), whose keys are fetched once and then cached. Each copy gets
//! one parked task; then rounds of [`POLLS`] sequential `tasks/get` of it over one keep-alive
//! connection: without a token on the first copy, with an RS256 token and with an ES256 token
//! on the second. The rounds alternate between the three, so that a slow patch of the machine
//! touches each alike, and the table shows the median of the rounds' p50 latencies, the
//! difference (what checking the token adds to a poll: parsing, the signature, the claims) and
//! the ratio to the poll without authorization.
//!
//! The native host runs its release build (one worker thread); the Worker runs under
//! `wrangler dev` as built for deployment (worker-build with wasm-opt), where the signature is
//! WebCrypto's. `--smoke` makes few polls on debug builds and judges nothing.

use std::error::Error;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use durable_mcp_tests::http::Connection;
use durable_mcp_tests::issuer::{Key, TestIssuer, access_claims, key_a, key_ec, key_set};
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::{
    WorkerProcess, build_worker, build_worker_optimized, workspace_root,
};
use serde_json::json;

use crate::bench::Scale;
use crate::http_bench::{Server, build_server};
use crate::stats::{Ranked, micros, print_row, ratio};

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

/// Sequential polls per round.
const POLLS: usize = 400;

/// Rounds of each kind of poll.
const ROUNDS: usize = 7;

/// The Worker crate measured.
const WORKER_CRATE: &str = "examples/conformance";

/// The scope the tokens grant (the fixture asks for none).
const SCOPE: &str = "mcp";

/// What a round polls with.
#[derive(Clone, Copy)]
enum Poll {
    Plain,
    Rs256,
    Es256,
}

impl Poll {
    const ALL: [Poll; 3] = [Poll::Plain, Poll::Rs256, Poll::Es256];
}

/// The medians of the rounds' p50 latency of each kind of poll, in [`Poll::ALL`]'s order.
type Figures = [Duration; 3];

/// One copy of the fixture on a host: its endpoint, and the task it polls.
struct Endpoint {
    client: McpClient,
    connection: Connection,
    task_id: String,
}

impl Endpoint {
    fn new(url: &str, token: Option<&str>) -> Result<Endpoint> {
        let client = McpClient::new(url);
        let mut connection = Connection::open(client.address())?;
        let arguments = json!({ "name": "slow_compute", "arguments": { "seconds": 3000 } });
        let created = send(&client, &mut connection, "tools/call", arguments, token)?;
        let task_id = created["result"]["taskId"]
            .as_str()
            .ok_or_else(|| format!("no task was created at {url}: {created}"))?
            .to_owned();
        Ok(Endpoint {
            client,
            connection,
            task_id,
        })
    }

    /// The p50 latency of `polls` sequential `tasks/get` with `token`.
    fn round(&mut self, polls: usize, token: Option<&str>) -> Result<Duration> {
        let mut latencies = Vec::with_capacity(polls);
        for _ in 0..polls {
            let params = json!({ "taskId": self.task_id });
            let started = Instant::now();
            let got = send(
                &self.client,
                &mut self.connection,
                "tasks/get",
                params,
                token,
            )?;
            latencies.push(started.elapsed());
            if got["result"]["status"] != "working" {
                return Err(format!("tasks/get answered {got}").into());
            }
        }
        Ranked::lowest_first(latencies)
            .median()
            .ok_or_else(|| "no poll was made".into())
    }
}

fn send(
    client: &McpClient,
    connection: &mut Connection,
    method: &str,
    params: serde_json::Value,
    token: Option<&str>,
) -> Result<serde_json::Value> {
    let (body, mut headers) = client.build(method, params, true);
    if let Some(token) = token {
        headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
    }
    let headers = durable_mcp_tests::http::borrowed(&headers);
    let response = connection.request("POST", "/mcp", &headers, body.to_string().as_bytes())?;
    if response.status != 200 {
        return Err(format!(
            "{method} answered {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        )
        .into());
    }
    Ok(response.json())
}

/// Polls both copies in alternating rounds.
fn measure(
    plain: &mut Endpoint,
    checked: &mut Endpoint,
    tokens: &[String; 2],
    scale: Scale,
) -> Result<Figures> {
    let (rounds, polls) = match scale {
        Scale::Full => (ROUNDS, POLLS),
        Scale::Smoke => (1, 5),
    };
    // One round of each first, unmeasured: the keys are fetched, and code paths warmed.
    plain.round(polls.min(20), None)?;
    for token in tokens {
        checked.round(polls.min(20), Some(token))?;
    }
    let mut p50s: [Vec<Duration>; 3] = Default::default();
    for _ in 0..rounds {
        for (kind, samples) in Poll::ALL.iter().zip(&mut p50s) {
            samples.push(match kind {
                Poll::Plain => plain.round(polls, None)?,
                Poll::Rs256 => checked.round(polls, Some(&tokens[0]))?,
                Poll::Es256 => checked.round(polls, Some(&tokens[1]))?,
            });
        }
    }
    let median =
        |samples: Vec<Duration>| Ranked::lowest_first(samples).median().unwrap_or_default();
    let [a, b, c] = p50s;
    Ok([median(a), median(b), median(c)])
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The settings that turn authorization on for an endpoint at `resource`.
fn settings<'a>(issuer: &'a TestIssuer, resource: &'a str) -> [(&'static str, &'a str); 2] {
    [
        ("DURABLE_MCP_OAUTH_ISSUER", issuer.url()),
        ("DURABLE_MCP_OAUTH_RESOURCE", resource),
    ]
}

fn tokens(issuer: &TestIssuer, resource: &str) -> [String; 2] {
    let claims = |key: Key| key.sign(&access_claims(issuer.url(), "bench", resource, SCOPE));
    [claims(key_a()), claims(key_ec())]
}

fn native(exe: &Path, issuer: &TestIssuer, scale: Scale) -> Result<Figures> {
    let binary = match scale {
        Scale::Full => build_server(exe)?,
        Scale::Smoke => crate::clients::build_binary(&workspace_root(), "conformance-server")?,
    };
    let port = free_port()?;
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let port = port.to_string();
    let mut env = vec![("PORT", port.as_str())];
    env.extend(settings(issuer, &resource));
    let plain_server = Server::start_with(&binary, Some(1), &[])?;
    let checked_server = Server::start_with(&binary, Some(1), &env)?;
    let tokens = tokens(issuer, &resource);
    let mut plain = Endpoint::new(&plain_server.url, None)?;
    let mut checked = Endpoint::new(&checked_server.url, Some(&tokens[0]))?;
    measure(&mut plain, &mut checked, &tokens, scale)
}

fn worker(issuer: &TestIssuer, scale: Scale) -> Result<Figures> {
    let dir = workspace_root().join(WORKER_CRATE);
    std::panic::catch_unwind(|| match scale {
        Scale::Full => build_worker_optimized(&dir),
        Scale::Smoke => build_worker(&dir),
    })
    .map_err(|_| format!("worker-build failed in {WORKER_CRATE}"))?;
    let port = free_port()?;
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let (plain_state, checked_state) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let plain_worker = WorkerProcess::start(&dir, plain_state.path());
    let checked_worker = WorkerProcess::start_on_port(
        &dir,
        "wrangler.toml",
        checked_state.path(),
        &settings(issuer, &resource),
        port,
    );
    let tokens = tokens(issuer, &resource);
    let mut plain = Endpoint::new(&plain_worker.mcp_url(), None)?;
    let mut checked = Endpoint::new(&checked_worker.mcp_url(), Some(&tokens[0]))?;
    measure(&mut plain, &mut checked, &tokens, scale)
}

/// Measures both hosts and prints the table.
pub fn run(exe: &Path, scale: Scale) -> Result<()> {
    let issuer = TestIssuer::start(key_set(&[&key_a(), &key_ec()]));
    eprintln!("bench: authorization's cost per poll, natively");
    let native = native(exe, &issuer, scale)?;
    eprintln!("bench: authorization's cost per poll, in a Worker under wrangler dev");
    let worker = worker(&issuer, scale)?;
    println!();
    let (rounds, polls) = match scale {
        Scale::Full => (ROUNDS, POLLS),
        Scale::Smoke => (1, 5),
    };
    println!(
        "MCP authorization: tasks/get p50, sequential, one connection (median of {rounds} rounds of {polls}; keys cached)"
    );
    print_row("", "native", "Worker", "", "");
    let row = |what: &str, index: usize| {
        print_row(what, &micros(native[index]), &micros(worker[index]), "", "");
    };
    row("without authorization", 0);
    row("with an RS256 token", 1);
    row("with an ES256 token", 2);
    for (what, index) in [
        ("RS256 check (difference)", 1),
        ("ES256 check (difference)", 2),
    ] {
        print_row(
            what,
            &micros(native[index].saturating_sub(native[0])),
            &micros(worker[index].saturating_sub(worker[0])),
            "",
            "",
        );
    }
    for (what, index) in [
        ("RS256 poll / poll without", 1),
        ("ES256 poll / poll without", 2),
    ] {
        print_row(
            what,
            &format!("{:.2}", ratio(native[index], native[0])),
            &format!("{:.2}", ratio(worker[index], worker[0])),
            "",
            "",
        );
    }
    if scale == Scale::Smoke {
        println!("(a smoke run: a few polls on debug builds; nothing is judged)");
    }
    Ok(())
}
