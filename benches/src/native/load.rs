//! The load generator of the HTTP bench, run as `bench-child load <url> <ids-file>
//! <connections> <seconds>` in a process of its own, so that its CPU is not the server's.
//!
//! It opens `<connections>` keep-alive connections to the MCP endpoint at `<url>`, one thread
//! each, and sends well-formed `tasks/get` requests (every header a conforming client sends,
//! the `_meta` envelope declaring the Tasks extension) round robin over the task ids in
//! `<ids-file>` (one a line), each connection waiting for a response before it sends the next
//! request. The request bytes are built once per task id, so sending one costs a `write`. With
//! [`BEARER_VAR`] set (for an endpoint behind its application's bearer check), every request
//! carries `Authorization: Bearer <its value>`.
//!
//! [`WARM_UP`] first, then `<seconds>` measured: a request counts if it was sent inside the
//! measured window. Every response must be HTTP 200 with a body that names the task and says
//! `"status":"working"`; anything else (or a broken connection) is an error. It prints one
//! line, `load-result requests=<n> seconds=<s> req_per_s=<n> p50_us=<n> p99_us=<n>
//! max_us=<n> errors=<n> sent=<n> cpu_s=<s>`: `requests` and the latencies cover the measured
//! window, `sent` counts the warm-up too, `cpu_s` is the CPU time this process used.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use durable_mcp_tests::mcp::McpClient;
use serde_json::json;
use xtask::Result;

use crate::procfs::cpu_time;
use crate::stats::{Ranked, per_second};

/// The prefix of the generator's result line.
pub const RESULT_PREFIX: &str = "load-result ";

/// The variable that, when set, gives the generator's requests a bearer token.
pub const BEARER_VAR: &str = "DURABLE_MCP_BENCH_BEARER";

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

/// Adds `Authorization: Bearer <bearer>` to `headers` if a token is given.
pub(super) fn authorize(headers: &mut Vec<(String, String)>, bearer: Option<&str>) {
    if let Some(token) = bearer {
        headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
    }
}

/// One `tasks/get` request, ready to send, and what its response must contain.
struct Prebuilt {
    /// The whole HTTP request: head and body.
    request: Vec<u8>,
    /// `"taskId":"<id>"`.
    task: Vec<u8>,
}

/// Builds the `tasks/get` request of `task_id`, as the tests' MCP client would send it, with
/// the `bearer` token if one is given.
fn prebuild(
    client: &McpClient,
    address: SocketAddr,
    path: &str,
    task_id: &str,
    bearer: Option<&str>,
) -> Prebuilt {
    let (body, mut headers) = client.build("tasks/get", json!({ "taskId": task_id }), true);
    authorize(&mut headers, bearer);
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
    /// The last response's body, its chunks joined.
    body: Vec<u8>,
}

/// A response read by [`Conn::exchange`]: its status and where it ends in the buffer. Its
/// body is in [`Conn::body`] until the next exchange.
struct Reply {
    /// The HTTP status code.
    status: u16,
    /// Where the response ends in the connection's buffer.
    end: usize,
}

/// How a response body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// `Content-Length: <n>`.
    Length(usize),
    /// `Transfer-Encoding: chunked`: the native host sends its JSON answers so, as hyper
    /// does with a body whose size it is not told in advance.
    Chunked,
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
            body: Vec::with_capacity(4 * 1024),
        })
    }

    /// Sends `request` and reads the whole response to it.
    fn exchange(&mut self, request: &[u8]) -> io::Result<Reply> {
        self.stream.write_all(request)?;
        let head_end = self.find_from(0, b"\r\n\r\n")? + 4;
        let head = &self.buf[..head_end];
        let status = head
            .strip_prefix(b"HTTP/1.1 ")
            .and_then(|rest| std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok())
            .ok_or_else(|| invalid("a response without an HTTP/1.1 status line"))?;
        let framing = framing(head)
            .ok_or_else(|| invalid("a response with neither Content-Length nor chunked"))?;
        self.body.clear();
        let end = match framing {
            Framing::Length(length) => {
                self.fill_to(head_end + length)?;
                let body = &self.buf[head_end..head_end + length];
                self.body.extend_from_slice(body);
                head_end + length
            }
            Framing::Chunked => self.read_chunks(head_end)?,
        };
        Ok(Reply { status, end })
    }

    /// Reads a chunked body that starts at `at` into [`body`](Self::body); returns where it
    /// ends (after the trailers' empty line).
    fn read_chunks(&mut self, mut at: usize) -> io::Result<usize> {
        loop {
            let line_end = self.find_from(at, b"\r\n")?;
            let size = chunk_size(&self.buf[at..line_end])
                .ok_or_else(|| invalid("a chunk whose size is not hexadecimal"))?;
            at = line_end + 2;
            if size == 0 {
                break;
            }
            self.fill_to(at + size + 2)?;
            if &self.buf[at + size..at + size + 2] != b"\r\n" {
                return Err(invalid("a chunk not followed by CRLF"));
            }
            self.body.extend_from_slice(&self.buf[at..at + size]);
            at += size + 2;
        }
        // Trailer lines, if any, up to the empty line that ends the message.
        loop {
            let line_end = self.find_from(at, b"\r\n")?;
            let empty = line_end == at;
            at = line_end + 2;
            if empty {
                return Ok(at);
            }
        }
    }

    /// Where `needle` first occurs in the bytes read from `from` on, reading until it does.
    fn find_from(&mut self, from: usize, needle: &[u8]) -> io::Result<usize> {
        loop {
            if let Some(at) = find(&self.buf[from..self.filled], needle) {
                return Ok(from + at);
            }
            self.fill()?;
        }
    }

    /// Reads until at least `len` bytes are in the buffer.
    fn fill_to(&mut self, len: usize) -> io::Result<()> {
        while self.filled < len {
            self.fill()?;
        }
        Ok(())
    }

    /// Drops the response [`exchange`](Self::exchange) returned, keeping any bytes after it.
    fn consume(&mut self, reply: &Reply) {
        self.buf.copy_within(reply.end..self.filled, 0);
        self.filled -= reply.end;
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

/// How the body of a response with this head is delimited; chunked wins over a length, as
/// HTTP/1.1 says.
fn framing(head: &[u8]) -> Option<Framing> {
    let mut length = None;
    for line in head.split(|&byte| byte == b'\n') {
        let Some((name, value)) = std::str::from_utf8(line)
            .ok()
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            return Some(Framing::Chunked);
        }
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok().map(Framing::Length);
        }
    }
    length
}

/// The size of a chunk from its size line (without the CRLF), extensions after `;` ignored.
fn chunk_size(line: &[u8]) -> Option<usize> {
    let line = std::str::from_utf8(line).ok()?;
    let digits = line.split(';').next()?.trim();
    usize::from_str_radix(digits, 16).ok()
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
        let body = &conn.body;
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

/// `bench-child load <url> <ids-file> <connections> <seconds>`.
pub fn child(args: &[&str]) -> Result<()> {
    let [url, ids_file, connections, seconds] = args else {
        return Err("usage: bench-child load <url> <ids-file> <connections> <seconds>".into());
    };
    let (address, path) = endpoint(url)?;
    let connections: usize = connections.parse()?;
    let measured = Duration::from_secs_f64(seconds.parse()?);
    let ids = std::fs::read_to_string(ids_file)?;
    let client = McpClient::new(url);
    let bearer = std::env::var(BEARER_VAR).ok();
    let requests: Vec<Prebuilt> = ids
        .lines()
        .filter(|id| !id.is_empty())
        .map(|id| prebuild(&client, address, &path, id, bearer.as_deref()))
        .collect();
    if requests.is_empty() || connections == 0 {
        return Err("no task ids or no connections".into());
    }
    let requests = Arc::new(requests);
    let conns = (0..connections)
        .map(|_| Conn::open(address))
        .collect::<io::Result<Vec<_>>>()?;
    let cpu_before = cpu_time(std::process::id())?;
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
    let cpu = cpu_time(std::process::id())? - cpu_before;
    if let Some(error) = first_error {
        eprintln!("load: {errors} errors; the first: {error}");
    }
    let latencies = Ranked::lowest_first(latencies);
    let percentile = |fraction: f64| latencies.percentile(fraction).unwrap_or(0);
    let us = |nanos: u64| nanos as f64 / 1e3;
    println!(
        "{RESULT_PREFIX}requests={} seconds={:.3} req_per_s={:.1} p50_us={:.1} p99_us={:.1} \
         max_us={:.1} errors={errors} sent={sent} cpu_s={:.3}",
        latencies.len(),
        measured.as_secs_f64(),
        per_second(latencies.len() as u64, measured),
        us(percentile(0.5)),
        us(percentile(0.99)),
        us(latencies.worst().unwrap_or(0)),
        cpu.as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;

    use super::{Conn, Framing, chunk_size, framing};

    #[test]
    fn a_body_is_framed_by_chunks_before_a_length() {
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(framing(chunked), Some(Framing::Chunked));
        let sized = b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\n";
        assert_eq!(framing(sized), Some(Framing::Length(12)));
        assert_eq!(framing(b"HTTP/1.1 200 OK\r\n\r\n"), None);
        assert_eq!(chunk_size(b"1a;name=value"), Some(26));
        assert_eq!(chunk_size(b"zz"), None);
    }

    #[test]
    fn chunked_and_sized_responses_follow_each_other_on_one_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            // Both answers at once: the client must not read one into the other.
            stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
                      5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n\
                      HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\nnope",
                )
                .unwrap();
            // Open until the client is done, so that its writes find a reader.
            std::io::copy(&mut stream, &mut std::io::sink()).unwrap();
        });
        let mut conn = Conn::open(address).unwrap();
        let reply = conn.exchange(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            (reply.status, conn.body.as_slice()),
            (200, &b"hello, world"[..])
        );
        conn.consume(&reply);
        let reply = conn.exchange(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((reply.status, conn.body.as_slice()), (404, &b"nope"[..]));
        drop(conn);
        server.join().unwrap();
    }
}
