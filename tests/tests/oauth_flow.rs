//! MCP authorization end to end, on both hosts: a real authorization server (oidc-provider,
//! `tests/oauth/authorization-server.mjs`) and the official SDKs' OAuth clients
//! (`tests/oauth/client-flow.mjs`) against the conformance fixture with authorization turned
//! on by its settings alone. Each client finds the authorization server from the 401, registers,
//! logs in as its user, gets a token for the endpoint and runs a task to its result; a token of
//! another user then finds nothing of it.
//!
//! Needs the npm packages of `tests/oauth` (`npm ci --prefix tests/oauth`; `cargo xtask test`
//! installs them).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::server::ServerProcess;
use durable_mcp_tests::workerd::{
    WorkerProcess, build_worker_once, one_worker_at_a_time, workspace_root,
};
use serde_json::json;

const SCOPE: &str = "mcp:tasks";

fn oauth_dir() -> PathBuf {
    let dir = workspace_root().join("tests/oauth");
    assert!(
        dir.join("node_modules").is_dir(),
        "the npm packages of tests/oauth are missing: run `npm ci --prefix tests/oauth` \
         (cargo xtask test does)"
    );
    dir
}

/// oidc-provider on a free port, until dropped.
struct AuthorizationServer {
    child: Child,
    issuer: String,
}

impl AuthorizationServer {
    fn start() -> Self {
        let mut child = Command::new("node")
            .arg("authorization-server.mjs")
            .args(["--scopes", SCOPE])
            .current_dir(oauth_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node, to run the authorization server");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the issuer line");
        let issuer = line
            .trim()
            .strip_prefix("issuer ")
            .unwrap_or_else(|| panic!("the authorization server printed {line:?}"))
            .to_owned();
        AuthorizationServer { child, issuer }
    }
}

impl Drop for AuthorizationServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one run of the official client's flow ended with.
struct Flow {
    token: String,
    task_id: String,
}

/// Runs the OAuth flow and a task as `user` on the `era` client against `url`.
fn run_flow(url: &str, user: &str, era: &str) -> Flow {
    let output = Command::new("node")
        .arg("client-flow.mjs")
        .args([url, "--user", user, "--era", era])
        .current_dir(oauth_dir())
        .stdin(Stdio::null())
        .output()
        .expect("node, to run the client flow");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the {era} client's flow as {user} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.lines().any(|line| line.starts_with("ok ")),
        "{stdout}"
    );
    let value = |prefix: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{stdout}"))
            .trim()
            .to_owned()
    };
    Flow {
        token: value("token "),
        task_id: value("task "),
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Both eras' clients each run a task as alice; bob's token (from his own flow) finds neither.
fn check_flows(url: &str) {
    let modern = run_flow(url, "alice", "2026");
    let legacy = run_flow(url, "alice", "2025");
    let bob = run_flow(url, "bob", "2026");
    let client = McpClient::new(url);
    for (token, task_id, expected) in [
        (&bob.token, &modern.task_id, None),
        (&bob.token, &legacy.task_id, None),
        (&modern.token, &legacy.task_id, Some("completed")),
    ] {
        let (body, mut headers) = client.build("tasks/get", json!({ "taskId": task_id }), true);
        headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        let answer = client.send_built(&body, &headers).json();
        match expected {
            Some(status) => assert_eq!(answer["result"]["status"], status, "{answer}"),
            None => {
                assert_eq!(answer["error"]["code"], -32602, "{answer}");
                assert!(
                    answer["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains("not found"),
                    "{answer}"
                );
            }
        }
    }
}

#[test]
fn official_clients_authorize_and_run_tasks_on_the_native_host() {
    let authorization = AuthorizationServer::start();
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let data = tempfile::tempdir().unwrap();
    let port = port.to_string();
    let server = ServerProcess::start(
        "conformance-server",
        data.path(),
        &[
            ("PORT", port.as_str()),
            ("DURABLE_MCP_OAUTH_ISSUER", authorization.issuer.as_str()),
            ("DURABLE_MCP_OAUTH_RESOURCE", resource.as_str()),
            ("DURABLE_MCP_OAUTH_SCOPES", SCOPE),
        ],
    );
    check_flows(server.url());
}

#[test]
fn official_clients_authorize_and_run_tasks_on_the_worker() {
    let dir = build_worker_once("examples/conformance");
    let _one = one_worker_at_a_time();
    let authorization = AuthorizationServer::start();
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let state = tempfile::tempdir().unwrap();
    let worker = WorkerProcess::start_on_port(
        &dir,
        "wrangler.toml",
        state.path(),
        &[
            ("DURABLE_MCP_OAUTH_ISSUER", authorization.issuer.as_str()),
            ("DURABLE_MCP_OAUTH_RESOURCE", resource.as_str()),
            ("DURABLE_MCP_OAUTH_SCOPES", SCOPE),
        ],
        port,
    );
    check_flows(&worker.mcp_url());
    // The refusals the Worker shares with the native host: no token, and a foreign one.
    let client = McpClient::new(&worker.mcp_url());
    let response = client.send("tools/list", json!({}), true);
    assert_eq!(response.status, 401, "{}", worker.log());
    assert!(
        response
            .header("www-authenticate")
            .unwrap()
            .contains(".well-known/oauth-protected-resource/mcp")
    );
}
