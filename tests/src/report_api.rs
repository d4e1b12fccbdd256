//! A fake of the report service `examples/report-task` calls (`REPORT_API_URL`), on a loopback
//! port: `GET /data?to=<to>` answers a report, `POST /send` accepts one. It records every call
//! and can be told to fail sends, for the example's tests and for `cargo xtask demo`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

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

/// Every call the fake received, and how it is told to misbehave.
#[derive(Debug, Default)]
struct Calls {
    /// `GET /data`: when, by recipient.
    fetches: HashMap<String, Vec<Instant>>,
    /// `POST /send`, in arrival order.
    sends: Vec<SendCall>,
    /// How many of the next sends answer 503.
    failing_sends: u32,
}

/// A report service on a loopback port: hand-written HTTP/1.1, one request per connection.
#[derive(Debug)]
pub struct FakeReportService {
    address: SocketAddr,
    calls: Arc<Mutex<Calls>>,
}

impl FakeReportService {
    /// A fake on a free loopback port.
    pub fn start() -> Self {
        Self::start_on(0)
    }

    /// A fake on loopback port `port` (`0`: a free one).
    pub fn start_on(port: u16) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|error| {
            panic!("cannot bind the fake report service to 127.0.0.1:{port}: {error}")
        });
        let address = listener.local_addr().expect("its address");
        let calls = Arc::new(Mutex::new(Calls::default()));
        let shared = Arc::clone(&calls);
        // Detached: it only ever waits in `accept`, and ends with the test process.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let calls = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &calls));
            }
        });
        FakeReportService { address, calls }
    }

    /// Its base URL (what `REPORT_API_URL` takes).
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The next `n` sends answer 503 Service Unavailable.
    pub fn fail_next_sends(&self, n: u32) {
        self.calls.lock().unwrap().failing_sends = n;
    }

    /// When `GET /data` was called for `to`.
    pub fn fetches(&self, to: &str) -> Vec<Instant> {
        let calls = self.calls.lock().unwrap();
        calls.fetches.get(to).cloned().unwrap_or_default()
    }

    /// Every `GET /data`, whoever it was for.
    pub fn all_fetches(&self) -> usize {
        self.calls
            .lock()
            .unwrap()
            .fetches
            .values()
            .map(Vec::len)
            .sum()
    }

    /// The `POST /send` calls for `to`, in order.
    pub fn sends(&self, to: &str) -> Vec<SendCall> {
        let calls = self.calls.lock().unwrap();
        calls
            .sends
            .iter()
            .filter(|send| send.to == to)
            .cloned()
            .collect()
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

fn serve(stream: TcpStream, calls: &Mutex<Calls>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let (status, body) = answer(&request, calls);
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
    let _ = reader.get_mut().write_all(response.as_bytes());
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<HttpRequest> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let (method, target) = (words.next()?.to_owned(), words.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
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
    reader.read_exact(&mut request.body).ok()?;
    Some(request)
}

fn answer(request: &HttpRequest, calls: &Mutex<Calls>) -> (u16, Value) {
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((&request.target, ""));
    match (request.method.as_str(), path) {
        ("GET", "/data") => {
            let Some(to) = query_value(query, "to") else {
                return (400, json!({ "error": "`to` is missing" }));
            };
            let mut calls = calls.lock().unwrap();
            calls
                .fetches
                .entry(to.clone())
                .or_default()
                .push(Instant::now());
            if to == GARBLED {
                return (200, json!({ "oops": "not a report" }));
            }
            (200, report_for(&to))
        }
        ("POST", "/send") => {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let mut calls = calls.lock().unwrap();
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
