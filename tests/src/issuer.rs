//! A stand-in authorization server for the refusal tests of MCP authorization: it publishes
//! RFC 8414 metadata and a key set the test controls (to rotate keys, or to go down), and
//! counts the requests it gets. Tokens are signed by the test with keys whose public halves it
//! publishes here. The full OAuth flow runs against a real authorization server instead
//! (`tests/oauth`). The signing keys are test keys of this repository
//! (`tests/tests/oauth_keys/`), never used elsewhere.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
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

/// A signing key and the JWK of its public half.
pub struct Key {
    /// Its key id (`kid`).
    pub kid: &'static str,
    /// The algorithm it signs with.
    pub alg: Algorithm,
    /// The private key.
    pub encoding: EncodingKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl Key {
    /// The RSA key in `pem`, for RS256.
    pub fn rsa(kid: &'static str, pem: &[u8]) -> Self {
        let encoding = EncodingKey::from_rsa_pem(pem).expect("an RSA test key");
        Key {
            kid,
            alg: Algorithm::RS256,
            encoding,
        }
    }

    /// The P-256 key in `pem`, for ES256.
    pub fn ec(kid: &'static str, pem: &[u8]) -> Self {
        let encoding = EncodingKey::from_ec_pem(pem).expect("an EC test key");
        Key {
            kid,
            alg: Algorithm::ES256,
            encoding,
        }
    }

    /// The Ed25519 key in `pem`, for EdDSA.
    pub fn ed(kid: &'static str, pem: &[u8]) -> Self {
        let encoding = EncodingKey::from_ed_pem(pem).expect("an Ed25519 test key");
        Key {
            kid,
            alg: Algorithm::EdDSA,
            encoding,
        }
    }

    /// The JWK of its public half.
    pub fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.encoding, self.alg).expect("a public JWK");
        jwk.common.key_id = Some(self.kid.to_owned());
        serde_json::to_value(jwk).unwrap()
    }

    /// `claims` signed with this key, as an RFC 9068 access token.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.to_owned());
        header.typ = Some("at+jwt".to_owned());
        encode(&header, claims, &self.encoding).expect("a signed token")
    }
}

/// RSA key a (RS256).
pub fn key_a() -> Key {
    Key::rsa("a", include_bytes!("../tests/oauth_keys/rsa-a.pem"))
}

/// RSA key b (RS256).
pub fn key_b() -> Key {
    Key::rsa("b", include_bytes!("../tests/oauth_keys/rsa-b.pem"))
}

/// A P-256 key (ES256).
pub fn key_ec() -> Key {
    Key::ec("ec", include_bytes!("../tests/oauth_keys/ec-a.pem"))
}

/// An Ed25519 key (EdDSA).
pub fn key_ed() -> Key {
    Key::ed("ed", include_bytes!("../tests/oauth_keys/ed-a.pem"))
}

/// Key b for RSA-PSS: a key names the one algorithm it signs with.
pub fn key_pss() -> Key {
    Key {
        kid: "pss",
        alg: Algorithm::PS256,
        ..key_b()
    }
}

/// The JWK Set of `keys`' public halves.
pub fn key_set(keys: &[&Key]) -> Value {
    json!({ "keys": keys.iter().map(|key| key.jwk()).collect::<Vec<_>>() })
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |since| since.as_secs().try_into().unwrap_or(i64::MAX))
}

/// The claims of an access token of `issuer` for `subject`, valid for five minutes from now,
/// for the resource `audience`, granting `scope`.
pub fn access_claims(issuer: &str, subject: &str, audience: &str, scope: &str) -> Value {
    json!({
        "iss": issuer,
        "sub": subject,
        "aud": audience,
        "client_id": "test-client",
        "scope": scope,
        "iat": now(),
        "exp": now() + 300,
        "jti": format!("{subject}-{}", now()),
    })
}
