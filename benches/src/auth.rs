//! What MCP authorization costs per request, the last part of `cargo xtask bench` (`bench auth`
//! runs only this part).
//!
//! On each host, two copies of the conformance fixture side by side: one without
//! authorization, one with it turned on by its settings (`DURABLE_MCP_OAUTH_ISSUER`,
//! `DURABLE_MCP_OAUTH_RESOURCE`) in front of a stand-in issuer on 127.0.0.1
//! (`durable_mcp_tests::issuer`), whose keys are fetched once and then cached. Each copy gets
//! one parked task; then rounds of [`POLLS`] sequential `tasks/get` of it over one keep-alive
//! connection: without a token on the first copy; on the second, with one RS256 token (what a
//! polling client sends: the server remembers a token it accepted), and with a new token on
//! every poll, RS256 and ES256 (each checked in full: parsing, the signature, the claims). The
//! rounds alternate between the four, so that a slow patch of the machine touches each alike,
//! and the table shows the median of the rounds' p50 latencies, the difference to the poll
//! without authorization, and the ratio to it.
//!
//! The native host runs its release build (one worker thread); the Worker runs under
//! `wrangler dev` as built for deployment (worker-build with wasm-opt), where the signature is
//! WebCrypto's. `--smoke` makes few polls on debug builds and judges nothing.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use durable_mcp_tests::http::Connection;
use durable_mcp_tests::issuer::{Key, TestIssuer, access_claims, key_a, key_ec, key_set};
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::{WorkerProcess, build_worker, build_worker_optimized};
use serde_json::json;
use xtask::Result;
use xtask::process::{Profile, build_binary, workspace_root};

use crate::native::start_server;
use crate::scale::Scale;
use crate::stats::{Ranked, micros, print_row, ratio};

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
    /// No token, on the copy without authorization.
    Plain,
    /// One RS256 token for every poll.
    SameRs256,
    /// A new RS256 token for every poll.
    FreshRs256,
    /// A new ES256 token for every poll.
    FreshEs256,
}

impl Poll {
    const ALL: [Poll; 4] = [
        Poll::Plain,
        Poll::SameRs256,
        Poll::FreshRs256,
        Poll::FreshEs256,
    ];

    const LABELS: [&str; 4] = [
        "without authorization",
        "one RS256 token (remembered)",
        "a new RS256 token each poll",
        "a new ES256 token each poll",
    ];
}

/// The medians of the rounds' p50 latency of each kind of poll, in [`Poll::ALL`]'s order.
type Figures = [Duration; 4];

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

    /// The p50 latency of `polls` sequential `tasks/get`, the `n`th with the `n`th of
    /// `tokens` (taken in turn; none when empty).
    fn round(&mut self, polls: usize, tokens: &[String]) -> Result<Duration> {
        let mut latencies = Vec::with_capacity(polls);
        for n in 0..polls {
            let params = json!({ "taskId": self.task_id });
            let token = (!tokens.is_empty()).then(|| tokens[n % tokens.len()].as_str());
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
    tokens: &Tokens,
    scale: Scale,
) -> Result<Figures> {
    let (rounds, polls) = counts(scale);
    // A round of each first, unmeasured: the keys are fetched, and code paths warmed.
    plain.round(polls.min(20), &[])?;
    checked.round(polls.min(20), std::slice::from_ref(&tokens.same))?;
    let mut p50s: [Vec<Duration>; 4] = Default::default();
    for round in 0..rounds {
        for (kind, samples) in Poll::ALL.iter().zip(&mut p50s) {
            samples.push(match kind {
                Poll::Plain => plain.round(polls, &[])?,
                Poll::SameRs256 => checked.round(polls, std::slice::from_ref(&tokens.same))?,
                Poll::FreshRs256 => checked.round(polls, &tokens.rs256[round])?,
                Poll::FreshEs256 => checked.round(polls, &tokens.es256[round])?,
            });
        }
    }
    Ok(p50s.map(|samples| Ranked::lowest_first(samples).median().unwrap_or_default()))
}

/// Rounds of each kind of poll, and polls per round.
fn counts(scale: Scale) -> (usize, usize) {
    match scale {
        Scale::Full => (ROUNDS, POLLS),
        Scale::Smoke => (1, 5),
    }
}

/// The tokens polled with: one to send every time, and a new one for each poll of each round.
struct Tokens {
    same: String,
    rs256: Vec<Vec<String>>,
    es256: Vec<Vec<String>>,
}

impl Tokens {
    fn sign(issuer: &TestIssuer, resource: &str, scale: Scale) -> Tokens {
        let (rounds, polls) = counts(scale);
        let sign = |key: &Key, n: usize| {
            let mut claims = access_claims(issuer.url(), "bench", resource, SCOPE);
            claims["jti"] = json!(format!("bench-{n}"));
            key.sign(&claims)
        };
        let (rs, es) = (key_a(), key_ec());
        let fresh =
            |key: &Key, round: usize| (0..polls).map(|n| sign(key, round * polls + n)).collect();
        Tokens {
            same: sign(&rs, usize::MAX),
            rs256: (0..rounds).map(|round| fresh(&rs, round)).collect(),
            es256: (0..rounds).map(|round| fresh(&es, round)).collect(),
        }
    }
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

fn native(issuer: &TestIssuer, scale: Scale) -> Result<Figures> {
    let profile = match scale {
        Scale::Full => Profile::Release,
        Scale::Smoke => Profile::Debug,
    };
    let binary = build_binary("conformance-server", profile)?;
    let port = free_port()?;
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let port = port.to_string();
    let mut env = vec![("PORT", port.as_str())];
    env.extend(settings(issuer, &resource));
    let plain_server = start_server(&binary, Some(1), &[])?;
    let checked_server = start_server(&binary, Some(1), &env)?;
    let tokens = Tokens::sign(issuer, &resource, scale);
    let mut plain = Endpoint::new(plain_server.url(), None)?;
    let mut checked = Endpoint::new(checked_server.url(), Some(&tokens.same))?;
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
    let tokens = Tokens::sign(issuer, &resource, scale);
    let mut plain = Endpoint::new(&plain_worker.mcp_url(), None)?;
    let mut checked = Endpoint::new(&checked_worker.mcp_url(), Some(&tokens.same))?;
    measure(&mut plain, &mut checked, &tokens, scale)
}

/// Measures both hosts and prints the table.
pub fn run(scale: Scale) -> Result<()> {
    let issuer = TestIssuer::start(key_set(&[&key_a(), &key_ec()]));
    eprintln!("bench: authorization's cost per poll, natively");
    let native = native(&issuer, scale)?;
    eprintln!("bench: authorization's cost per poll, in a Worker under wrangler dev");
    let worker = worker(&issuer, scale)?;
    println!();
    let (rounds, polls) = counts(scale);
    println!(
        "MCP authorization: tasks/get p50, sequential, one connection (median of {rounds} rounds of {polls}; keys cached)"
    );
    print_row("", "native", "Worker", "", "");
    for (index, label) in Poll::LABELS.iter().enumerate() {
        print_row(
            label,
            &micros(native[index]),
            &micros(worker[index]),
            "",
            "",
        );
    }
    for (index, label) in Poll::LABELS.iter().enumerate().skip(1) {
        let added = |figures: &Figures| micros(figures[index].saturating_sub(figures[0]));
        print_row(
            &format!("  added: {label}"),
            &added(&native),
            &added(&worker),
            "",
            "",
        );
    }
    for (index, label) in Poll::LABELS.iter().enumerate().skip(1) {
        let times = |figures: &Figures| format!("{:.2}", ratio(figures[index], figures[0]));
        print_row(
            &format!("  x: {label}"),
            &times(&native),
            &times(&worker),
            "",
            "",
        );
    }
    if scale == Scale::Smoke {
        println!("(a smoke run: a few polls on debug builds; nothing is judged)");
    }
    Ok(())
}
