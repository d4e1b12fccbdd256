//! MCP authorization on both hosts, black-box: the conformance fixture with authorization
//! turned on by its settings alone (`DURABLE_MCP_OAUTH_ISSUER`, `DURABLE_MCP_OAUTH_RESOURCE`,
//! `DURABLE_MCP_OAUTH_SCOPES`), natively and as a Worker under `wrangler dev` (where signatures
//! are checked by WebCrypto rather than RustCrypto), in front of a stand-in issuer whose keys
//! the tests control. Every refusal is checked to change nothing; the full OAuth flow of an
//! official client against a real authorization server is `oauth_flow.rs`.

use std::net::TcpListener;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use durable_mcp_tests::http::{Connection, Response};
use durable_mcp_tests::issuer::{
    Key, TestIssuer, access_claims, key_a, key_b, key_ec, key_ed, key_pss, key_set, now,
};
use durable_mcp_tests::listen::{End, Listen};
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::server::ServerProcess;
use durable_mcp_tests::workerd::{WorkerProcess, build_worker_once, one_worker_at_a_time};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

const SCOPE: &str = "mcp:tasks";

/// The host under test.
enum Host {
    Native(ServerProcess),
    /// With the guard that keeps other tests' Workers from starting meanwhile.
    Worker {
        worker: WorkerProcess,
        _one: std::sync::MutexGuard<'static, ()>,
    },
}

/// The fixture server with authorization on, and the issuer it trusts.
struct Fixture {
    issuer: TestIssuer,
    host: Host,
    client: McpClient,
    resource: String,
    _data: tempfile::TempDir,
}

impl Fixture {
    /// The native host, with one worker thread: each keeps its own key cache, and the rotation
    /// check counts fetches.
    fn native(keys: Value) -> Self {
        Fixture::start(keys, |port, settings, data| {
            let port = port.to_string();
            let mut env = vec![("PORT", port.as_str()), ("DURABLE_MCP_WORKERS", "1")];
            env.extend_from_slice(settings);
            Host::Native(ServerProcess::start("conformance-server", data, &env))
        })
    }

    /// The fixture as a Worker under `wrangler dev`.
    fn worker(keys: Value) -> Self {
        let dir = build_worker_once("examples/conformance");
        let one = one_worker_at_a_time();
        Fixture::start(keys, move |port, settings, data| Host::Worker {
            worker: WorkerProcess::start_on_port(&dir, "wrangler.toml", data, settings, port),
            _one: one,
        })
    }

    fn start(
        keys: Value,
        host: impl FnOnce(u16, &[(&str, &str)], &std::path::Path) -> Host,
    ) -> Self {
        let issuer = TestIssuer::start(keys);
        // The resource names the port, so it is chosen before the server starts.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let data = tempfile::tempdir().unwrap();
        let settings = [
            ("DURABLE_MCP_OAUTH_ISSUER", issuer.url()),
            ("DURABLE_MCP_OAUTH_RESOURCE", resource.as_str()),
            ("DURABLE_MCP_OAUTH_SCOPES", SCOPE),
        ];
        let host = host(port, &settings, data.path());
        let client = McpClient::new(&resource);
        Fixture {
            issuer,
            host,
            client,
            resource,
            _data: data,
        }
    }

    fn log(&self) -> String {
        match &self.host {
            Host::Native(server) => server.log(),
            Host::Worker { worker, .. } => worker.log(),
        }
    }

    /// The claims of a token for `subject`, valid now, for this server, with `scope`.
    fn claims(&self, subject: &str) -> Value {
        access_claims(self.issuer.url(), subject, &self.resource, SCOPE)
    }

    fn token(&self, subject: &str) -> String {
        key_a().sign(&self.claims(subject))
    }

    /// Sends `method` with `params` (declaring the Tasks extension) with `authorization`.
    fn send(&self, method: &str, params: Value, authorization: Option<&str>) -> Response {
        let (body, mut headers) = self.client.build(method, params, true);
        if let Some(authorization) = authorization {
            headers.push(("Authorization".to_owned(), authorization.to_owned()));
        }
        self.client.send_built(&body, &headers)
    }

    fn as_bearer(&self, method: &str, params: Value, token: &str) -> Response {
        self.send(method, params, Some(&format!("Bearer {token}")))
    }

    fn get(&self, path: &str) -> Response {
        Connection::open(self.client.address())
            .and_then(|mut connection| connection.request("GET", path, &[], b""))
            .expect("a GET of the server")
    }

    fn metadata_url(&self) -> String {
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            self.client.address()
        )
    }
}

fn challenge(response: &Response) -> &str {
    response.header("www-authenticate").unwrap_or_else(|| {
        panic!(
            "no challenge with {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        )
    })
}

/// Asserts a 401 `invalid_token` refusal that names the metadata.
fn assert_invalid_token(fixture: &Fixture, response: &Response, what: &str) {
    assert_eq!(
        response.status,
        401,
        "{what}: {}",
        String::from_utf8_lossy(&response.body)
    );
    let challenge = challenge(response);
    assert!(challenge.starts_with("Bearer "), "{what}: {challenge}");
    assert!(
        challenge.contains("error=\"invalid_token\""),
        "{what}: {challenge}"
    );
    assert!(
        challenge.contains(&format!("resource_metadata=\"{}\"", fixture.metadata_url())),
        "{what}: {challenge}"
    );
    assert_eq!(response.json()["error"]["code"], -32001, "{what}");
}

#[test]
fn the_metadata_names_the_resource_and_its_issuer_for_any_origin() {
    metadata_names_the_resource_and_its_issuer_for_any_origin(&Fixture::native(key_set(&[
        &key_a(),
    ])));
}

fn metadata_names_the_resource_and_its_issuer_for_any_origin(fixture: &Fixture) {
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = fixture.get(path);
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(
            response.header("access-control-allow-origin"),
            Some("*"),
            "{path}"
        );
        assert_eq!(
            response.json(),
            json!({
                "resource": fixture.resource,
                "authorization_servers": [fixture.issuer.url()],
                "bearer_methods_supported": ["header"],
                "scopes_supported": [SCOPE],
            }),
            "{path}"
        );
    }
    // The host started, and answers, without having asked its issuer anything.
    assert_eq!(fixture.issuer.requests(), 0);
}

#[test]
fn a_request_without_a_usable_token_is_challenged_and_the_issuer_is_not_asked() {
    request_without_a_usable_token_is_challenged(&Fixture::native(key_set(&[&key_a()])));
}

fn request_without_a_usable_token_is_challenged(fixture: &Fixture) {
    let response = fixture.send("tools/list", json!({}), None);
    assert_eq!(response.status, 401);
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer scope=\"{SCOPE}\", resource_metadata=\"{}\"",
            fixture.metadata_url()
        )
    );
    let message = response.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("Authorization: Bearer"), "{message}");

    // Another scheme is no token either.
    let response = fixture.send("tools/list", json!({}), Some("Basic dXNlcjpwYXNz"));
    assert_eq!(response.status, 401);
    assert!(!challenge(&response).contains("error="));

    let unsigned = {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"at+jwt"}"#);
        let claims = URL_SAFE_NO_PAD.encode(fixture.claims("alice").to_string());
        format!("{header}.{claims}.")
    };
    let hmac_with_public_key = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("a".to_owned());
        let secret = EncodingKey::from_secret(include_bytes!("oauth_keys/rsa-a.pub.pem")).unwrap();
        encode(&header, &fixture.claims("alice"), &secret).unwrap()
    };
    let foreign_issuer = {
        let mut claims = fixture.claims("alice");
        claims["iss"] = json!("https://login.other.example");
        key_a().sign(&claims)
    };
    for (what, token) in [
        ("malformed", "not-a-jwt".to_owned()),
        ("two parts", "abc.def".to_owned()),
        ("alg none", unsigned),
        ("HMAC signed with the public key", hmac_with_public_key),
        ("another issuer", foreign_issuer),
    ] {
        let response = fixture.as_bearer("tools/list", json!({}), &token);
        assert_invalid_token(fixture, &response, what);
    }
    assert_eq!(
        fixture.issuer.requests(),
        0,
        "a token refused on its face reaches no issuer"
    );

    // A token in the query string is refused outright, even a valid one.
    let token = fixture.token("alice");
    let (body, headers) = fixture.client.build("tools/list", json!({}), true);
    let headers = durable_mcp_tests::http::borrowed(&headers);
    let response = Connection::open(fixture.client.address())
        .and_then(|mut c| {
            c.request(
                "POST",
                &format!("/mcp?access_token={token}"),
                &headers,
                body.to_string().as_bytes(),
            )
        })
        .unwrap();
    assert_eq!(response.status, 400);
    assert!(challenge(&response).contains("error=\"invalid_request\""));
}

#[test]
fn tokens_are_checked_for_signature_audience_time_and_scope() {
    tokens_are_checked(&Fixture::native(key_set(&[
        &key_a(),
        &key_ec(),
        &key_ed(),
        &key_pss(),
    ])));
}

fn tokens_are_checked(fixture: &Fixture) {
    let valid = fixture.token("alice");
    assert_eq!(
        fixture.as_bearer("tools/list", json!({}), &valid).status,
        200
    );
    assert!(
        fixture.issuer.requests() >= 1,
        "the keys were fetched when first needed"
    );

    // The forms of the resource real clients send are the same audience.
    for audience in [
        format!("{}/", fixture.resource),
        fixture.resource.replace("http://", "HTTP://"),
    ] {
        let mut claims = fixture.claims("alice");
        claims["aud"] = json!([audience, "https://other.example"]);
        let response = fixture.as_bearer("tools/list", json!({}), &key_a().sign(&claims));
        assert_eq!(response.status, 200, "aud {audience}");
    }
    for key in [key_ec(), key_ed(), key_pss()] {
        let token = key.sign(&fixture.claims("alice"));
        let response = fixture.as_bearer("tools/list", json!({}), &token);
        assert_eq!(
            response.status,
            200,
            "{:?}: {}",
            key.alg,
            String::from_utf8_lossy(&response.body)
        );
    }

    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = fixture.claims("alice");
        change(&mut claims);
        key_a().sign(&claims)
    };
    let forged = Key {
        kid: "a",
        ..key_b()
    }
    .sign(&fixture.claims("alice"));
    let mismatched = Key {
        kid: "a",
        alg: Algorithm::PS256,
        ..key_a()
    }
    .sign(&fixture.claims("alice"));
    let refused = [
        ("a wrong signature", forged),
        ("an algorithm the key does not name", mismatched),
        (
            "another audience",
            with(&|c| c["aud"] = json!("http://127.0.0.1:1/mcp")),
        ),
        (
            "no audience",
            with(&|c| _ = c.as_object_mut().unwrap().remove("aud")),
        ),
        ("expired", with(&|c| c["exp"] = json!(now() - 120))),
        ("not yet valid", with(&|c| c["nbf"] = json!(now() + 300))),
        (
            "no subject",
            with(&|c| _ = c.as_object_mut().unwrap().remove("sub")),
        ),
    ];
    for (what, token) in refused {
        let response = fixture.as_bearer("tools/list", json!({}), &token);
        assert_invalid_token(fixture, &response, what);
    }

    let without_scope = with(&|c| c["scope"] = json!("profile"));
    let response = fixture.as_bearer("tools/list", json!({}), &without_scope);
    assert_eq!(response.status, 403);
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"insufficient_scope\", error_description=\"this request needs the scopes {SCOPE}\", \
             scope=\"{SCOPE}\", resource_metadata=\"{}\"",
            fixture.metadata_url()
        )
    );
    // Nothing was created by any refused call.
    let created = fixture.as_bearer(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": {} }),
        &without_scope,
    );
    assert_eq!(created.status, 403);
    assert!(!fixture.log().contains("task created"), "{}", fixture.log());
}

#[test]
fn a_task_is_reachable_by_its_user_with_a_fresh_token_and_by_nobody_else() {
    task_is_reachable_by_its_user_only(&Fixture::native(key_set(&[&key_a()])));
}

fn task_is_reachable_by_its_user_only(fixture: &Fixture) {
    let alice = fixture.token("alice");
    let created = fixture.as_bearer(
        "tools/call",
        json!({ "name": "slow_compute", "arguments": { "seconds": 60 } }),
        &alice,
    );
    let task_id = created.json()["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", created.json()))
        .to_owned();

    // Another token of the same user (a refresh) reaches it.
    let mut refreshed = fixture.claims("alice");
    refreshed["jti"] = json!("refreshed");
    refreshed["client_id"] = json!("re-registered-client");
    let alice_again = key_a().sign(&refreshed);
    let got = fixture
        .as_bearer("tasks/get", json!({ "taskId": task_id }), &alice_again)
        .json();
    assert_eq!(got["result"]["status"], "working", "{got}");

    // Bob is told what he is told of a task that does not exist, whatever he tries.
    let bob = fixture.token("bob");
    let unknown = "0123456789abcdef0123456789abcdef";
    for (method, params) in [
        ("tasks/get", json!({})),
        ("tasks/cancel", json!({})),
        (
            "tasks/update",
            json!({ "inputResponses": { "confirm": { "action": "accept", "content": {} } } }),
        ),
    ] {
        let answer = |id: &str| {
            let mut params = params.clone();
            params["taskId"] = json!(id);
            let response = fixture.as_bearer(method, params, &bob);
            (response.status, response.json()["error"].clone())
        };
        let (status, error) = answer(&task_id);
        let (unknown_status, unknown_error) = answer(unknown);
        assert_eq!(status, unknown_status, "{method}");
        assert_eq!(error["code"], unknown_error["code"], "{method}");
        assert_eq!(
            error["message"].as_str().unwrap().replace(&task_id, "<id>"),
            unknown_error["message"]
                .as_str()
                .unwrap()
                .replace(unknown, "<id>"),
            "{method}"
        );
    }
    // Nor can he answer it through an inline round of a call (a client without the Tasks
    // extension sends the round's requestState back).
    let (mut body, mut headers) = fixture.client.build(
        "tools/call",
        json!({
            "name": "slow_compute",
            "arguments": {},
            "requestState": format!("durable-mcp/task/{task_id}"),
            "inputResponses": { "confirm": { "action": "accept", "content": {} } },
        }),
        false,
    );
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"] =
        json!({});
    headers.push(("Authorization".to_owned(), format!("Bearer {bob}")));
    let round = fixture.client.send_built(&body, &headers).json();
    assert_eq!(round["error"]["code"], -32602, "{round}");
    assert!(
        round["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{round}"
    );
    // A listen stream: without a token it is challenged and opens nothing; bob's stream
    // leaves alice's task out, as it would an unknown one, and ends at once; alice's follows it.
    let listen = json!({ "notifications": { "taskIds": [task_id] } });
    let refused = fixture.send("subscriptions/listen", listen.clone(), None);
    assert_eq!(refused.status, 401, "{}", refused.json());
    assert!(refused.header("www-authenticate").is_some());
    let filter = &listen["notifications"];
    let as_bob = format!("Bearer {bob}");
    let mut bobs = Listen::open(
        &fixture.client,
        filter.clone(),
        &[("Authorization", &as_bob)],
    );
    let ack = bobs.next_message().expect("an acknowledgement");
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "taskIds": [] }),
        "{ack}"
    );
    let (before, end) = bobs.end();
    assert!(
        before.is_empty() && matches!(end, End::Complete(_)),
        "{before:?}"
    );
    let as_alice = format!("Bearer {alice}");
    let mut alices = Listen::open(
        &fixture.client,
        filter.clone(),
        &[("Authorization", &as_alice)],
    );
    alices.next_message().expect("an acknowledgement");
    assert_eq!(alices.task()["taskId"], task_id.as_str());

    let got = fixture
        .as_bearer("tasks/get", json!({ "taskId": task_id }), &alice)
        .json();
    assert_eq!(
        got["result"]["status"], "working",
        "bob changed nothing: {got}"
    );
}

#[test]
fn a_rotated_key_is_fetched_once_and_an_outage_is_503_never_a_pass() {
    rotated_key_and_outage(&Fixture::native(key_set(&[&key_a()])));
}

#[test]
fn the_worker_refuses_and_accepts_as_the_native_host_does() {
    let fixture = Fixture::worker(key_set(&[&key_a(), &key_ec(), &key_ed(), &key_pss()]));
    metadata_names_the_resource_and_its_issuer_for_any_origin(&fixture);
    request_without_a_usable_token_is_challenged(&fixture);
    tokens_are_checked(&fixture);
    task_is_reachable_by_its_user_only(&fixture);
    fixture.issuer.publish(key_set(&[&key_a()]));
    rotated_key_and_outage(&fixture);
}

fn rotated_key_and_outage(fixture: &Fixture) {
    assert_eq!(
        fixture
            .as_bearer("tools/list", json!({}), &fixture.token("alice"))
            .status,
        200
    );

    // The issuer rotates to key b; a token signed with it names a kid the server has not seen.
    fixture.issuer.publish(key_set(&[&key_a(), &key_b()]));
    let rotated = key_b().sign(&fixture.claims("alice"));
    // Refreshes are at most one per 5 s; wait that out so the first try is the one checked.
    // A time-based rule, not synchronisation: nothing is awaited, and the last fetch came
    // before the sleep began, so a slow machine only makes the gap longer.
    std::thread::sleep(Duration::from_millis(5_200));
    let before = fixture.issuer.requests();
    assert_eq!(
        fixture.as_bearer("tools/list", json!({}), &rotated).status,
        200,
        "after the refresh"
    );
    assert_eq!(
        fixture.issuer.requests(),
        before + 1,
        "one fetch of the key set"
    );
    assert_eq!(
        fixture.as_bearer("tools/list", json!({}), &rotated).status,
        200
    );
    assert_eq!(fixture.issuer.requests(), before + 1, "kept");

    // The issuer goes down: known keys still verify, an unknown one is 503, not a pass.
    fixture.issuer.set_down(true);
    // Past the refresh interval again (as above: a rule of time, not a race), so that the
    // unknown key below makes the server fetch from the issuer that is down.
    std::thread::sleep(Duration::from_millis(5_200));
    let unknown_kid = Key {
        kid: "c",
        ..key_b()
    }
    .sign(&fixture.claims("alice"));
    let response = fixture.as_bearer("tools/list", json!({}), &unknown_kid);
    assert_eq!(
        response.status,
        503,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert!(response.header("retry-after").is_some());
    assert_eq!(
        fixture.as_bearer("tools/list", json!({}), &rotated).status,
        200,
        "cached keys still verify"
    );
}
