//! The load generator of the HTTP bench, run as `xtask bench-child load <url> <ids-file>
//! <connections> <seconds>` in a process of its own, so that its CPU is not the server's.
//!
//! It opens `<connections>` keep-alive connections to the MCP endpoint at `<url>`, one thread
//! each, and sends well-formed `tasks/get` requests (every header a conforming client sends,
//! the `_meta` envelope declaring the Tasks extension) round robin over the task ids in
//! `<ids-file>` (one a line), each connection waiting for a response before it sends the next
//! request. The request bytes are built once per task id, so sending one costs a `write`.
//!
//! [`WARM_UP`] first, then `<seconds>` measured: a request counts if it was sent inside the
//! measured window. Every response must be HTTP 200 with a body that names the task and says
//! `"status":"working"`; anything else (or a broken connection) is an error. It prints one
//! line, `load-result requests=<n> seconds=<s> req_per_s=<n> p50_us=<n> p99_us=<n>
//! max_us=<n> errors=<n> sent=<n> cpu_s=<s>`: `requests` and the latencies cover the measured
//! window, `sent` counts the warm-up too, `cpu_s` is the CPU time this process used.

use std::error::Error;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use durable_mcp_tests::mcp::McpClient;
use serde_json::json;

/// A result whose error is any error.
type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

/// The prefix of the generator's result line.
pub const RESULT_PREFIX: &str = "load-result ";

/// How long the generator runs before it starts measuring.
pub const WARM_UP: Duration = Duration::from_secs(1);

/// What a response body must contain besides the task's id.
const WORKING: &[u8] = br#""status":"working""#;

/// The socket address and path of an `http://<ip>:<port>/<path>` URL.
pub fn endpoint(url: &str) -> Result<(SocketAddr, String)> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url:?} is not an http:// URL"))?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let address = authority
        .parse()
        .map_err(|_| format!("{authority:?} is not an IP address and port"))?;
    Ok((address, format!("/{path}")))
}

/// One `tasks/get` request, ready to send, and what its response must contain.
struct Prebuilt {
    /// The whole HTTP request: head and body.
    request: Vec<u8>,
    /// `"taskId":"<id>"`.
    task: Vec<u8>,
}

/// Builds the `tasks/get` request of `task_id`, as the tests' MCP client would send it.
fn prebuild(client: &McpClient, address: SocketAddr, path: &str, task_id: &str) -> Prebuilt {
    let (body, headers) = client.build("tasks/get", json!({ "taskId": task_id }), true);
    let body = body.to_string();
    let mut head = format!("POST {path} HTTP/1.1\r\nHost: {address}\r\n");
    for (name, value) in &headers {
        head += &format!("{name}: {value}\r\n");
    }
    head += &format!("Content-Length: {}\r\n\r\n", body.len());
    let mut request = head.into_bytes();
    request.extend_from_slice(body.as_bytes());
    Prebuilt {
        request,
        task: format!(r#""taskId":"{task_id}""#).into_bytes(),
    }
}

/// One keep-alive connection that reads responses into a buffer it reuses.
struct Conn {
    /// The socket.
    stream: TcpStream,
    /// Bytes read and not consumed yet, from the start, and spare room after them.
    buf: Vec<u8>,
    /// How much of `buf` holds bytes read.
    filled: usize,
}

/// A response read by [`Conn::exchange`]: its status and where its body lies in the buffer.
struct Reply {
    /// The HTTP status code.
    status: u16,
    /// The body's bytes in the connection's buffer.
    body: std::ops::Range<usize>,
}

impl Conn {
    /// Connects to `address`, with Nagle off as the server has it.
    fn open(address: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(address)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(Conn {
            stream,
            buf: vec![0; 16 * 1024],
            filled: 0,
        })
    }

    /// Sends `request` and reads the response to it (which must have a `Content-Length`).
    /// The body stays in the buffer until the next exchange.
    fn exchange(&mut self, request: &[u8]) -> io::Result<Reply> {
        self.stream.write_all(request)?;
        let head_end = loop {
            if let Some(at) = find(&self.buf[..self.filled], b"\r\n\r\n") {
                break at + 4;
            }
            self.fill()?;
        };
        let head = &self.buf[..head_end];
        let status = head
            .strip_prefix(b"HTTP/1.1 ")
            .and_then(|rest| std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok())
            .ok_or_else(|| invalid("a response without an HTTP/1.1 status line"))?;
        let length = content_length(head).ok_or_else(|| invalid("no Content-Length"))?;
        while self.filled < head_end + length {
            self.fill()?;
        }
        Ok(Reply {
            status,
            body: head_end..head_end + length,
        })
    }

    /// Drops the response [`exchange`](Self::exchange) returned, keeping any bytes after it.
    fn consume(&mut self, reply: &Reply) {
        self.buf.copy_within(reply.body.end..self.filled, 0);
        self.filled -= reply.body.end;
    }

    /// Reads more bytes into the buffer, growing it when full.
    fn fill(&mut self) -> io::Result<()> {
        if self.filled == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        match self.stream.read(&mut self.buf[self.filled..])? {
            0 => Err(io::ErrorKind::UnexpectedEof.into()),
            read => {
                self.filled += read;
                Ok(())
            }
        }
    }
}

/// An [`io::ErrorKind::InvalidData`] error.
fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The `Content-Length` of a response head.
fn content_length(head: &[u8]) -> Option<usize> {
    head.split(|&byte| byte == b'\n').find_map(|line| {
        let (name, value) = std::str::from_utf8(line).ok()?.split_once(':')?;
        if !name.trim().eq_ignore_ascii_case("content-length") {
            return None;
        }
        value.trim().parse().ok()
    })
}

/// When the warm-up ends and when the measured window does.
#[derive(Clone, Copy)]
struct Window {
    /// Requests sent from this instant on are measured.
    measure_from: Instant,
    /// No request is sent from this instant on.
    until: Instant,
}

/// What one connection's thread did.
#[derive(Default)]
struct Outcome {
    /// Latency, in nanoseconds, of every request sent inside the measured window.
    latencies: Vec<u64>,
    /// Requests sent, the warm-up included.
    sent: u64,
    /// Responses that were not a `working` task, and broken connections.
    errors: u64,
    /// The first error, described.
    first_error: Option<String>,
}

impl Outcome {
    /// Counts an error, keeping its description if it is the first.
    fn error(&mut self, description: String) {
        self.errors += 1;
        self.first_error.get_or_insert(description);
    }
}

/// Sends requests on `conn` round robin from `start` until the window ends.
fn drive(mut conn: Conn, requests: &[Prebuilt], start: usize, window: Window) -> Outcome {
    let mut outcome = Outcome {
        latencies: Vec::with_capacity(1 << 16),
        ..Outcome::default()
    };
    let mut next = start;
    loop {
        let prebuilt = &requests[next];
        next = (next + 1) % requests.len();
        let sent = Instant::now();
        if sent >= window.until {
            return outcome;
        }
        outcome.sent += 1;
        let reply = match conn.exchange(&prebuilt.request) {
            Ok(reply) => reply,
            Err(error) => {
                // The connection is unusable: stop it, the error fails the bench anyway.
                outcome.error(format!("connection broke: {error}"));
                return outcome;
            }
        };
        let latency = sent.elapsed();
        let body = &conn.buf[reply.body.clone()];
        if reply.status != 200
            || find(body, WORKING).is_none()
            || find(body, &prebuilt.task).is_none()
        {
            outcome.error(format!(
                "HTTP {}: {}",
                reply.status,
                String::from_utf8_lossy(body)
            ));
        }
        conn.consume(&reply);
        if sent >= window.measure_from {
            outcome
                .latencies
                .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
        }
    }
}

/// `xtask bench-child load <url> <ids-file> <connections> <seconds>`.
pub fn child(args: &[&str]) -> Result<()> {
    let [url, ids_file, connections, seconds] = args else {
        return Err(
            "usage: xtask bench-child load <url> <ids-file> <connections> <seconds>".into(),
        );
    };
    let (address, path) = endpoint(url)?;
    let connections: usize = connections.parse()?;
    let measured = Duration::from_secs_f64(seconds.parse()?);
    let ids = std::fs::read_to_string(ids_file)?;
    let client = McpClient::new(url);
    let requests: Vec<Prebuilt> = ids
        .lines()
        .filter(|id| !id.is_empty())
        .map(|id| prebuild(&client, address, &path, id))
        .collect();
    if requests.is_empty() || connections == 0 {
        return Err("no task ids or no connections".into());
    }
    let requests = Arc::new(requests);
    let conns = (0..connections)
        .map(|_| Conn::open(address))
        .collect::<io::Result<Vec<_>>>()?;
    let cpu_before = crate::http_bench::cpu_time(std::process::id())?;
    let begin = Instant::now();
    let window = Window {
        measure_from: begin + WARM_UP,
        until: begin + WARM_UP + measured,
    };
    let threads: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(i, conn)| {
            let requests = Arc::clone(&requests);
            // Spread the connections over the ids; each then walks them in order.
            let start = i * requests.len() / connections;
            std::thread::spawn(move || drive(conn, &requests, start, window))
        })
        .collect();
    let mut latencies = Vec::new();
    let (mut sent, mut errors, mut first_error) = (0, 0, None);
    for thread in threads {
        let outcome = thread.join().map_err(|_| "a load thread panicked")?;
        latencies.extend(outcome.latencies);
        sent += outcome.sent;
        errors += outcome.errors;
        first_error = first_error.or(outcome.first_error);
    }
    let cpu = crate::http_bench::cpu_time(std::process::id())? - cpu_before;
    if let Some(error) = first_error {
        eprintln!("load: {errors} errors; the first: {error}");
    }
    latencies.sort_unstable();
    let percentile = |p: usize| -> u64 {
        // The smallest latency that at least p% of the requests did not exceed.
        let rank = (latencies.len() * p).div_ceil(100).max(1);
        latencies.get(rank - 1).copied().unwrap_or(0)
    };
    let us = |nanos: u64| nanos as f64 / 1e3;
    println!(
        "{RESULT_PREFIX}requests={} seconds={:.3} req_per_s={:.1} p50_us={:.1} p99_us={:.1} \
         max_us={:.1} errors={errors} sent={sent} cpu_s={:.3}",
        latencies.len(),
        measured.as_secs_f64(),
        latencies.len() as f64 / measured.as_secs_f64(),
        us(percentile(50)),
        us(percentile(99)),
        us(latencies.last().copied().unwrap_or(0)),
        cpu.as_secs_f64()
    );
    Ok(())
}
