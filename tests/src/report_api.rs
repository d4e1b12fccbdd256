//! A fake of the report service `examples/report-task` calls (`REPORT_API_URL`), on a loopback
//! port: `GET /data?to=<to>` answers a report, `POST /send` accepts one. It records every call
//! and can be told to fail sends or to answer fetches slowly ([`FetchDelay`]), for the
//! example's tests, the backlog scenario (see the `backlog` module) and `cargo xtask demo`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Semaphore, watch};

/// The recipient whose report the fake garbles (a 200 answer that is not a report).
pub const GARBLED: &str = "garbled@example.org";

/// One `POST /send` the fake received.
#[derive(Clone, Debug)]
pub struct SendCall {
    /// The `to` of the body.
    pub to: String,
    /// The `Idempotency-Key` header.
    pub idempotency_key: Option<String>,
    /// The body.
    pub body: Value,
    /// What the fake answered.
    pub status: u16,
    /// When it arrived.
    pub at: Instant,
}

/// How long the fake waits before it answers a `GET /data`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FetchDelay {
    /// At once (the default).
    #[default]
    None,
    /// Between the two bounds (inclusive, to the millisecond), chosen per request from a hash
    /// of its `to` and of how many fetches of that `to` came before it
    /// ([`FetchDelay::for_fetch`]), so that a run is reproducible.
    Range(Duration, Duration),
    /// Until the delay is set to something else; the fetch then waits as the new setting
    /// says, counted from that moment.
    Hold,
}

impl FetchDelay {
    /// How long fetch number `nth` (from 0) of `to` waits under this setting; `None` while it
    /// is held.
    pub fn for_fetch(self, to: &str, nth: usize) -> Option<Duration> {
        match self {
            FetchDelay::None => Some(Duration::ZERO),
            FetchDelay::Hold => None,
            FetchDelay::Range(low, high) => {
                let (low, high) = (low.min(high), low.max(high));
                let span = u64::try_from((high - low).as_millis()).unwrap_or(u64::MAX);
                let pick = mix(to, nth) % span.saturating_add(1);
                Some(low + Duration::from_millis(pick))
            }
        }
    }
}

/// A well-spread 64-bit hash of `to` and `nth`: FNV-1a, then splitmix64's finaliser.
fn mix(to: &str, nth: usize) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in to.bytes().chain((nth as u64).to_le_bytes()) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// Every call the fake received, and how it is told to misbehave.
#[derive(Debug, Default)]
struct Calls {
    /// `GET /data`: when, by recipient.
    fetches: HashMap<String, Vec<Instant>>,
    /// `POST /send`, in arrival order.
    sends: Vec<SendCall>,
    /// How many of the next sends answer 503.
    failing_sends: u32,
    /// Fetches waiting for [`FetchDelay::Hold`] to end.
    held: usize,
    /// Connections accepted and not yet closed.
    open: usize,
}

/// The calls, and the fetch delay, which held fetches watch for a change.
#[derive(Debug)]
struct Shared {
    calls: Mutex<Calls>,
    fetch_delay: watch::Sender<FetchDelay>,
}

/// A report service on a loopback port: hand-written HTTP/1.1, one request per connection,
/// served by a single-threaded tokio runtime on a thread of its own, so that tens of thousands
/// of slow or held fetches can wait at once.
#[derive(Debug)]
pub struct FakeReportService {
    address: SocketAddr,
    shared: Arc<Shared>,
}

/// Connections the listening socket queues before the fake accepts them (the kernel caps it
/// at `net.core.somaxconn`): a host may open thousands at once.
const BACKLOG: u32 = 4096;

/// How long a connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A listening socket on loopback port `port` with a backlog of [`BACKLOG`]; inside a runtime.
fn listen(port: u16) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
    socket.listen(BACKLOG)
}

impl FakeReportService {
    /// A fake on a free loopback port.
    pub fn start() -> Self {
        Self::start_on(0)
    }

    /// A fake on loopback port `port` (`0`: a free one).
    pub fn start_on(port: u16) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the fake report service");
        let listener = {
            let _inside = runtime.enter();
            listen(port).unwrap_or_else(|error| {
                panic!("cannot bind the fake report service to 127.0.0.1:{port}: {error}")
            })
        };
        let address = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            calls: Mutex::default(),
            fetch_delay: watch::Sender::new(FetchDelay::None),
        });
        let serving = Arc::clone(&shared);
        // Detached: it only ever waits for connections, and ends with the test process.
        std::thread::spawn(move || runtime.block_on(accept(listener, serving)));
        FakeReportService { address, shared }
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.shared.calls.lock().unwrap()
    }

    /// Its base URL (what `REPORT_API_URL` takes).
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The next `n` sends answer 503 Service Unavailable.
    pub fn fail_next_sends(&self, n: u32) {
        self.calls().failing_sends = n;
    }

    /// Makes every `GET /data` from now on wait as `delay` says; fetches held so far wait
    /// as `delay` says from now (with [`FetchDelay::Hold`], they stay held).
    pub fn set_fetch_delay(&self, delay: FetchDelay) {
        self.shared.fetch_delay.send_replace(delay);
    }

    /// How many fetches are held by [`FetchDelay::Hold`] right now.
    pub fn held_fetches(&self) -> usize {
        self.calls().held
    }

    /// How many connections are open: accepted, and not yet answered and closed.
    pub fn open_connections(&self) -> usize {
        self.calls().open
    }

    /// When `GET /data` was called for `to`.
    pub fn fetches(&self, to: &str) -> Vec<Instant> {
        let calls = self.calls();
        calls.fetches.get(to).cloned().unwrap_or_default()
    }

    /// How many times `GET /data` was called, by recipient.
    pub fn fetch_counts(&self) -> HashMap<String, usize> {
        let calls = self.calls();
        calls
            .fetches
            .iter()
            .map(|(to, at)| (to.clone(), at.len()))
            .collect()
    }

    /// Every `GET /data`, whoever it was for.
    pub fn all_fetches(&self) -> usize {
        self.calls().fetches.values().map(Vec::len).sum()
    }

    /// The `POST /send` calls for `to`, in order.
    pub fn sends(&self, to: &str) -> Vec<SendCall> {
        let calls = self.calls();
        calls
            .sends
            .iter()
            .filter(|send| send.to == to)
            .cloned()
            .collect()
    }

    /// How many `POST /send` calls arrived, whatever they were answered.
    pub fn send_count(&self) -> usize {
        self.calls().sends.len()
    }

    /// Every `POST /send`, in arrival order.
    pub fn all_sends(&self) -> Vec<SendCall> {
        self.calls().sends.clone()
    }

    /// The `POST /send` calls by recipient, each in arrival order: what an exactly-once check
    /// of many recipients reads (one pass, where [`sends`](Self::sends) is one per recipient).
    pub fn sends_by_recipient(&self) -> HashMap<String, Vec<SendCall>> {
        let mut by_to: HashMap<String, Vec<SendCall>> = HashMap::new();
        for send in &self.calls().sends {
            by_to.entry(send.to.clone()).or_default().push(send.clone());
        }
        by_to
    }
}

/// The report the fake serves for `to`.
pub fn report_for(to: &str) -> Value {
    json!({
        "title": format!("Weekly numbers for {to}"),
        "rows": [
            { "day": "mon", "orders": 3 },
            { "day": "tue", "orders": 1 },
            { "day": "wed", "orders": 4 },
        ],
    })
}

struct HttpRequest {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpRequest {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.clone())
    }
}

/// Accepts connections for ever, each served by a task of its own, at most
/// [`max_connections`] at once: beyond them, connections wait in the listen backlog, so that
/// the process keeps descriptors for everything else it does (its own clients, a child).
async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(max_connections()));
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                let shared = Arc::clone(&shared);
                shared.calls.lock().unwrap().open += 1;
                tokio::spawn(async move {
                    serve(stream, &shared).await;
                    shared.calls.lock().unwrap().open -= 1;
                    drop(slot);
                });
            }
            // Out of descriptors all the same: the connection waits in the backlog meanwhile.
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

/// Descriptors the fake leaves to the rest of its process.
const SPARE_DESCRIPTORS: usize = 1024;

/// How many connections the fake serves at once: the process's descriptor limit (from
/// `/proc/self/limits`; 1,024 where it cannot be read) less [`SPARE_DESCRIPTORS`], at least 64.
fn max_connections() -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3)?.parse::<usize>().ok()
        })
        .unwrap_or(1024);
    limit.saturating_sub(SPARE_DESCRIPTORS).max(64)
}

async fn serve(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    let Ok(Some(request)) = tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut reader)).await
    else {
        return;
    };
    let (status, body) = answer(&request, shared).await;
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        503 => "Service Unavailable",
        _ => "Not Found",
    };
    let body = body.to_string();
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = reader.get_mut().write_all(response.as_bytes()).await;
}

async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<HttpRequest> {
    let mut line = String::new();
    reader.read_line(&mut line).await.ok()?;
    let mut words = line.split_whitespace();
    let (method, target) = (words.next()?.to_owned(), words.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let mut request = HttpRequest {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    let length = request
        .header("content-length")
        .map_or(Some(0), |n| n.parse().ok())?;
    request.body = vec![0; length];
    reader.read_exact(&mut request.body).await.ok()?;
    Some(request)
}

async fn answer(request: &HttpRequest, shared: &Shared) -> (u16, Value) {
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((&request.target, ""));
    match (request.method.as_str(), path) {
        ("GET", "/data") => {
            let Some(to) = query_value(query, "to") else {
                return (400, json!({ "error": "`to` is missing" }));
            };
            let nth = {
                let mut calls = shared.calls.lock().unwrap();
                let fetches = calls.fetches.entry(to.clone()).or_default();
                fetches.push(Instant::now());
                fetches.len() - 1
            };
            wait_for_fetch(shared, &to, nth).await;
            if to == GARBLED {
                return (200, json!({ "oops": "not a report" }));
            }
            (200, report_for(&to))
        }
        ("POST", "/send") => {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let mut calls = shared.calls.lock().unwrap();
            let status = if calls.failing_sends > 0 {
                calls.failing_sends -= 1;
                503
            } else {
                200
            };
            calls.sends.push(SendCall {
                to: body["to"].as_str().unwrap_or_default().to_owned(),
                idempotency_key: request.header("idempotency-key"),
                body,
                status,
                at: Instant::now(),
            });
            (status, json!({ "accepted": status == 200 }))
        }
        _ => (404, json!({ "error": "no such endpoint" })),
    }
}

/// Waits as the fetch delay says for fetch number `nth` of `to`: first while it is held,
/// then the delay the setting of that moment gives.
async fn wait_for_fetch(shared: &Shared, to: &str, nth: usize) {
    let mut setting = shared.fetch_delay.subscribe();
    let now = setting.borrow_and_update().for_fetch(to, nth);
    let delay = match now {
        Some(delay) => delay,
        None => {
            shared.calls.lock().unwrap().held += 1;
            let released = setting
                .wait_for(|delay| delay.for_fetch(to, nth).is_some())
                .await
                .ok()
                .and_then(|delay| delay.for_fetch(to, nth));
            shared.calls.lock().unwrap().held -= 1;
            released.unwrap_or_default()
        }
    };
    tokio::time::sleep(delay).await;
}

/// The percent-decoded value of `name` in a query string.
fn query_value(query: &str, name: &str) -> Option<String> {
    let (_, raw) = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)?;
    let mut bytes = Vec::new();
    let mut rest = raw.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::FetchDelay;

    #[test]
    fn a_fetch_delay_is_reproducible_and_within_its_range() {
        let range = FetchDelay::Range(Duration::from_millis(50), Duration::from_millis(600));
        let delays: Vec<Duration> = (0..1000)
            .map(|i| {
                range
                    .for_fetch(&format!("r{i}@example.org"), i % 3)
                    .unwrap()
            })
            .collect();
        let again: Vec<Duration> = (0..1000)
            .map(|i| {
                range
                    .for_fetch(&format!("r{i}@example.org"), i % 3)
                    .unwrap()
            })
            .collect();
        assert_eq!(delays, again);
        let (low, high) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
        assert!(*low >= Duration::from_millis(50) && *high <= Duration::from_millis(600));
        // Spread over the range, not bunched at one end.
        assert!(*low < Duration::from_millis(100) && *high > Duration::from_millis(550));
        // A second fetch of one recipient waits another time.
        assert_ne!(
            range.for_fetch("ada@example.org", 0),
            range.for_fetch("ada@example.org", 1)
        );
        assert_eq!(FetchDelay::Hold.for_fetch("ada@example.org", 0), None);
        assert_eq!(
            FetchDelay::None.for_fetch("ada@example.org", 0),
            Some(Duration::ZERO)
        );
    }
}
