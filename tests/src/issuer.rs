//! A stand-in authorization server for the refusal tests of MCP authorization: it publishes
//! RFC 8414 metadata and a key set the test controls (to rotate keys, or to go down), and
//! counts the requests it gets. Tokens are signed by the test with keys whose public halves it
//! publishes here. The full OAuth flow runs against a real authorization server instead
//! (`tests/oauth`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

#[derive(Debug, Default)]
struct State {
    keys: Value,
    down: bool,
    requests: usize,
}

/// An issuer on a free port of 127.0.0.1, serving until the process ends.
#[derive(Debug, Clone)]
pub struct TestIssuer {
    url: String,
    state: Arc<Mutex<State>>,
}

impl TestIssuer {
    /// Starts an issuer publishing `keys` (a JWK Set).
    pub fn start(keys: Value) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the test issuer");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let state = Arc::new(Mutex::new(State {
            keys,
            ..State::default()
        }));
        let issuer = TestIssuer { url, state };
        let serving = issuer.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serving.answer(stream);
            }
        });
        issuer
    }

    /// Its issuer identifier (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Publishes `keys` from now on (a key rotation).
    pub fn publish(&self, keys: Value) {
        self.state.lock().unwrap().keys = keys;
    }

    /// Makes every request fail with 503 (an outage), or serve again.
    pub fn set_down(&self, down: bool) {
        self.state.lock().unwrap().down = down;
    }

    /// How many requests it has had.
    pub fn requests(&self) -> usize {
        self.state.lock().unwrap().requests
    }

    fn answer(&self, stream: std::net::TcpStream) {
        let mut reader = BufReader::new(&stream);
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
        // The rest of the head: the requests here carry no body.
        loop {
            let mut header = String::new();
            match reader.read_line(&mut header) {
                Ok(0) | Err(_) => break,
                Ok(_) if header == "\r\n" => break,
                Ok(_) => {}
            }
        }
        let (status, body) = {
            let mut state = self.state.lock().unwrap();
            state.requests += 1;
            match path.as_str() {
                _ if state.down => (503, json!({ "error": "temporarily_unavailable" })),
                "/.well-known/oauth-authorization-server" => (
                    200,
                    json!({ "issuer": self.url, "jwks_uri": format!("{}/jwks", self.url) }),
                ),
                "/jwks" => (200, state.keys.clone()),
                _ => (404, json!({ "error": "not_found" })),
            }
        };
        let body = body.to_string();
        let _ = write!(
            &stream,
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}
