//! An MCP 2026-07-28 client for tests: every request carries the `_meta` envelope and the
//! routing headers a conforming client sends, and the raw form lets a test break any of them.

use std::cell::Cell;
use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::http::{Connection, Response, Streaming};

/// The protocol revision the client speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// The Tasks extension identifier.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A client of one MCP endpoint.
#[derive(Debug)]
pub struct McpClient {
    address: SocketAddr,
    path: String,
    next_id: Cell<i64>,
}

/// The `_meta` envelope of a request; `tasks` declares the Tasks extension.
pub fn envelope(tasks: bool) -> Value {
    let extensions = if tasks {
        json!({ TASKS: {} })
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": { "extensions": extensions },
        "io.modelcontextprotocol/clientInfo": { "name": "durable-mcp-tests", "version": "0" },
    })
}

/// The value a conforming client puts in `Mcp-Name` for `method` with `params`.
pub fn routed_name(method: &str, params: &Value) -> Option<String> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params[field].as_str().map(str::to_owned)
}

impl McpClient {
    /// A client of the endpoint at `url` (`http://127.0.0.1:<port>/mcp`).
    pub fn new(url: &str) -> Self {
        let rest = url
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("only http:// URLs are supported, got {url:?}"));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        McpClient {
            address: authority
                .parse()
                .unwrap_or_else(|_| panic!("{authority:?} is not an IP address and port")),
            path: format!("/{path}"),
            next_id: Cell::new(1),
        }
    }

    /// The endpoint's socket address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The endpoint's URL, for another client of it.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.address, self.path)
    }

    /// Sends a raw HTTP request to the endpoint.
    pub fn raw(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        Connection::open(self.address)
            .and_then(|mut connection| connection.request(method, &self.path, headers, body))
            .unwrap_or_else(|error| panic!("request to {} failed: {error}", self.address))
    }

    /// Sends a raw HTTP request to the endpoint and returns as soon as the response's head has
    /// arrived; its body is read as the server sends it.
    pub fn raw_streaming(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Streaming {
        Connection::open(self.address)
            .and_then(|connection| connection.request_streaming(method, &self.path, headers, body))
            .unwrap_or_else(|error| panic!("request to {} failed: {error}", self.address))
    }

    /// A fresh request id.
    pub fn next_id(&self) -> i64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }

    /// The body and headers of a well-formed request of `method` with `params` (an object to
    /// which the envelope is added).
    pub fn build(
        &self,
        method: &str,
        mut params: Value,
        tasks: bool,
    ) -> (Value, Vec<(String, String)>) {
        params["_meta"] = envelope(tasks);
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            (
                "MCP-Protocol-Version".to_owned(),
                PROTOCOL_VERSION.to_owned(),
            ),
            ("Mcp-Method".to_owned(), method.to_owned()),
        ];
        if let Some(name) = routed_name(method, &params) {
            headers.push(("Mcp-Name".to_owned(), name));
        }
        let body =
            json!({ "jsonrpc": "2.0", "id": self.next_id(), "method": method, "params": params });
        (body, headers)
    }

    /// Sends a well-formed request.
    pub fn send(&self, method: &str, params: Value, tasks: bool) -> Response {
        let (body, headers) = self.build(method, params, tasks);
        self.send_built(&body, &headers)
    }

    /// Sends a request built with [`build`](Self::build), perhaps altered.
    pub fn send_built(&self, body: &Value, headers: &[(String, String)]) -> Response {
        let headers = crate::http::borrowed(headers);
        self.raw("POST", &headers, body.to_string().as_bytes())
    }

    /// Calls the task tool `tool` with no arguments and follows its task to `completed`:
    /// the text of its result.
    pub fn run_task(&self, tool: &str) -> String {
        let created = self.result("tools/call", json!({ "name": tool, "arguments": {} }));
        assert_eq!(created["resultType"], "task", "{tool}: {created}");
        let id = created["taskId"].as_str().expect("taskId").to_owned();
        let done = crate::wait::until(
            &format!("{tool}: task {id} to complete"),
            || self.result("tasks/get", json!({ "taskId": id })),
            |got| match got["status"].as_str() {
                Some("completed") => true,
                Some("working") => false,
                _ => panic!("{tool}: task {id} did not complete: {got}"),
            },
        );
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool}: no text: {done}"))
            .to_owned()
    }

    /// Sends `tools/call` with `params` as a 2026-07-28 client that did not declare the Tasks
    /// extension but declared form elicitation (the Python SDK's default mode) sends it.
    pub fn call_without_tasks(&self, params: Value) -> Response {
        let (mut body, headers) = self.build("tools/call", params, false);
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"] =
            json!({ "form": {} });
        self.send_built(&body, &headers)
    }

    /// Calls the task tool `tool` with `arguments` as a task and returns the task's id,
    /// panicking if no task was created.
    pub fn create_task(&self, tool: &str, arguments: Value) -> String {
        let created = self.result(
            "tools/call",
            serde_json::json!({ "name": tool, "arguments": arguments }),
        );
        created["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool} created no task: {created}"))
            .to_owned()
    }

    /// Sends a request declaring the Tasks extension and returns its `result`, panicking on an
    /// error response.
    pub fn result(&self, method: &str, params: Value) -> Value {
        let response = self.send(method, params, true);
        let body = response.json();
        assert_eq!(
            response.status, 200,
            "{method} answered {}: {body}",
            response.status
        );
        body.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} answered without a result: {body}"))
    }
}
