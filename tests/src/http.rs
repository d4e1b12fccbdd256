//! A minimal HTTP/1.1 client over one keep-alive TCP connection: enough to drive an MCP
//! endpoint from tests and from the load generator, with nothing between the bytes and us.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An HTTP response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON (`Null` when empty).
    pub fn json(&self) -> serde_json::Value {
        if self.body.is_empty() {
            return serde_json::Value::Null;
        }
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "response body is not JSON ({error}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// One keep-alive connection.
#[derive(Debug)]
pub struct Connection {
    reader: BufReader<TcpStream>,
    host: String,
}

/// Owned header pairs (as [`McpClient::build`](crate::mcp::McpClient::build) returns them)
/// borrowed as [`Connection::request`] takes them.
pub fn borrowed(headers: &[(String, String)]) -> Vec<(&str, &str)> {
    headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect()
}

impl Connection {
    /// Connects to `address`.
    pub fn open(address: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(address)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        Ok(Connection {
            reader: BufReader::new(stream),
            host: address.to_string(),
        })
    }

    /// Sends one request and reads its response. `headers` must not include `Host` or
    /// `Content-Length` unless `raw_host` is wanted; a `Host` given in `headers` replaces ours.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Response> {
        self.write_request(method, path, headers, body)?;
        self.read_response()
    }

    /// Sends one request like [`request`](Self::request) and returns its response as soon as
    /// the head has arrived, with the body to read as it comes (server-sent events). The
    /// connection goes with it.
    pub fn request_streaming(
        mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Streaming> {
        self.write_request(method, path, headers, body)?;
        let (status, headers) = self.read_head()?;
        let framing = framing(&headers);
        Ok(Streaming {
            status,
            headers,
            reader: self.reader,
            framing,
        })
    }

    fn write_request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<()> {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            head += &format!("Host: {}\r\n", self.host);
        }
        for (name, value) in headers {
            head += &format!("{name}: {value}\r\n");
        }
        if let Some(token) = bearer_for(headers) {
            head += &format!("Authorization: Bearer {token}\r\n");
        }
        head += &format!("Content-Length: {}\r\n\r\n", body.len());
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)
    }

    fn read_response(&mut self) -> io::Result<Response> {
        let (status, headers) = self.read_head()?;
        let body = match framing(&headers) {
            Framing::Chunked => self.read_chunked()?,
            Framing::Length(length) => {
                let mut body = vec![0; length];
                self.reader.read_exact(&mut body)?;
                body
            }
        };
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    fn read_head(&mut self) -> io::Result<(u16, Vec<(String, String)>)> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| io::Error::other(format!("bad status line {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some((name, value)) = trimmed.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        Ok((status, headers))
    }

    fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        while let Some(chunk) = read_chunk(&mut self.reader)? {
            body.extend(chunk);
        }
        Ok(body)
    }
}

/// How a response body is delimited.
#[derive(Clone, Copy, Debug)]
enum Framing {
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// `Content-Length` (0 when absent: this client reads no body delimited by a close).
    Length(usize),
}

/// The variable that, when set, gives every request without an `Authorization` header of its
/// own a bearer token: for a server behind its application's bearer check (the fixtures
/// mounted in the axum-app example's service).
pub const TEST_TOKEN_VAR: &str = "DURABLE_MCP_TEST_TOKEN";

/// The header the fixture server reads a caller's principal from when nothing else names it.
pub const FIXTURE_PRINCIPAL_HEADER: &str = "x-fixture-principal";

/// The token a request with `headers` carries under [`TEST_TOKEN_VAR`]: the variable's value,
/// or for a request made as a principal (the fixture's principal header) the value followed by
/// `.` and the principal, the token that application gives that user.
fn bearer_for(headers: &[(&str, &str)]) -> Option<String> {
    let named = |wanted: &str| {
        (headers.iter())
            .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
            .map(|(_, value)| *value)
    };
    if named("authorization").is_some() {
        return None;
    }
    let token = std::env::var(TEST_TOKEN_VAR).ok()?;
    Some(match named(FIXTURE_PRINCIPAL_HEADER) {
        Some(principal) => format!("{token}.{principal}"),
        None => token,
    })
}

fn framing(headers: &[(String, String)]) -> Framing {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        Framing::Chunked
    } else {
        Framing::Length(
            header("content-length")
                .and_then(|length| length.parse().ok())
                .unwrap_or(0),
        )
    }
}

/// The next chunk of a chunked body; `None` after the last one.
fn read_chunk(reader: &mut BufReader<TcpStream>) -> io::Result<Option<Vec<u8>>> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    // A chunk size may carry extensions after a `;`.
    let size = line.trim().split(';').next().unwrap_or_default();
    let size = usize::from_str_radix(size.trim(), 16)
        .map_err(|_| io::Error::other(format!("bad chunk size {line:?}")))?;
    let mut chunk = vec![0; size + 2];
    reader.read_exact(&mut chunk)?;
    if size == 0 {
        return Ok(None);
    }
    chunk.truncate(size);
    Ok(Some(chunk))
}

/// A response whose head has arrived and whose body is read as the server sends it.
#[derive(Debug)]
pub struct Streaming {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
    framing: Framing,
}

impl Streaming {
    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The next bytes of the body as they arrive; `None` once it has ended.
    pub fn next_bytes(&mut self) -> io::Result<Option<Vec<u8>>> {
        match &mut self.framing {
            Framing::Chunked => read_chunk(&mut self.reader),
            Framing::Length(0) => Ok(None),
            Framing::Length(left) => {
                let mut bytes = vec![0; (*left).min(8192)];
                let read = self.reader.read(&mut bytes)?;
                if read == 0 {
                    return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
                }
                *left -= read;
                bytes.truncate(read);
                Ok(Some(bytes))
            }
        }
    }

    /// The rest of the body, and the response it completes.
    pub fn finish(mut self) -> io::Result<Response> {
        let mut body = Vec::new();
        while let Some(bytes) = self.next_bytes()? {
            body.extend(bytes);
        }
        Ok(Response {
            status: self.status,
            headers: self.headers,
            body,
        })
    }
}
