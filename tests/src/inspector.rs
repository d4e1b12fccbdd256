//! The task inspector's API, driven as an operator would, against the conformance fixtures'
//! server on either host: [`operator_round`] is the scenario both hosts' tests run.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::http::{Connection, Response};
use crate::listen::Events;
use crate::mcp::McpClient;

/// The inspector of a running server, and the token it was given.
#[derive(Debug)]
pub struct Inspector {
    address: SocketAddr,
    path: String,
    token: String,
}

impl Inspector {
    /// The inspector served at `path` (the host's `INSPECTOR_PATH`) by the server at
    /// `address`, used with `token`.
    pub fn new(address: SocketAddr, path: &str, token: &str) -> Self {
        Inspector {
            address,
            path: path.to_owned(),
            token: token.to_owned(),
        }
    }

    /// A request to `path` (under the inspector's path) with `authorization` as the header
    /// (none if `None`).
    pub fn request_as(
        &self,
        authorization: Option<&str>,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Response {
        let path = format!("{}{path}", self.path);
        let mut headers = vec![("content-type", "application/json")];
        if let Some(authorization) = authorization {
            headers.push(("authorization", authorization));
        }
        Connection::open(self.address)
            .and_then(|mut connection| connection.request(method, &path, &headers, body))
            .unwrap_or_else(|error| panic!("{method} {path}: {error}"))
    }

    /// A request with the right token.
    pub fn request(&self, method: &str, path: &str, body: &[u8]) -> Response {
        let bearer = format!("Bearer {}", self.token);
        self.request_as(Some(&bearer), method, path, body)
    }

    /// The JSON of a GET that must succeed.
    pub fn get(&self, path: &str) -> Value {
        let response = self.request("GET", path, b"");
        assert_eq!(response.status, 200, "GET {path}: {}", body_text(&response));
        response.json()
    }

    /// The JSON of a POST of `body` that must succeed.
    pub fn post(&self, path: &str, body: &Value) -> Value {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let response = self.request("POST", path, &bytes);
        assert_eq!(
            response.status,
            200,
            "POST {path}: {}",
            body_text(&response)
        );
        response.json()
    }

    /// Every task a listing with `query` shows, as its summary, page after page of `limit`.
    pub fn list(&self, query: &str, limit: usize) -> Vec<Value> {
        let mut tasks = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/api/tasks?limit={limit}");
            if !query.is_empty() {
                path = format!("{path}&{query}");
            }
            if let Some(cursor) = &cursor {
                path = format!("{path}&cursor={cursor}");
            }
            let page = self.get(&path);
            let listed = page["tasks"].as_array().expect("a page lists tasks");
            assert!(listed.len() <= limit, "{page}");
            tasks.extend(listed.iter().cloned());
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return tasks,
            }
        }
    }

    /// The ids of every task a listing with `query` shows, page after page of `limit`.
    pub fn ids(&self, query: &str, limit: usize) -> Vec<String> {
        self.list(query, limit).iter().map(task_id).collect()
    }

    /// The inspector's event stream of the task: one message per change, pushed.
    pub fn events(&self, id: &str) -> Events {
        let path = format!("{}/api/tasks/{id}/events", self.path);
        let bearer = format!("Bearer {}", self.token);
        let streaming = Connection::open(self.address)
            .and_then(|connection| {
                connection.request_streaming("GET", &path, &[("authorization", &bearer)], b"")
            })
            .unwrap_or_else(|error| panic!("GET {path}: {error}"));
        assert_eq!(streaming.status, 200, "GET {path}");
        Events::new(streaming)
    }

    /// Polls the task until `ready` holds for its detail; 60 s at most.
    pub fn wait_until(&self, id: &str, ready: impl Fn(&Value) -> bool) -> Value {
        let read = || self.get(&format!("/api/tasks/{id}"));
        crate::wait::until(&format!("task {id} in the inspector"), read, ready)
    }
}

fn task_id(task: &Value) -> String {
    task["taskId"]
        .as_str()
        .expect("a task has an id")
        .to_owned()
}

/// Where a task stands in the documented listing order: by creation, to the millisecond,
/// then by id. (`createdAt` is fixed-width RFC 3339, so its text sorts as its time.)
fn listing_position(task: &Value) -> (String, String) {
    let created = task["createdAt"].as_str().expect("a task has createdAt");
    (created.to_owned(), task_id(task))
}

fn body_text(response: &Response) -> String {
    String::from_utf8_lossy(&response.body).into_owned()
}

/// An operator's round on a conformance fixtures' server: a wrong token changes nothing; the
/// listing filters and pages; a task's detail shows its journal and open question; answer,
/// wake and cancel each move their task on; bad input is refused with 400.
pub fn operator_round(client: &McpClient, inspector: &Inspector) {
    let asking = client.create_task("confirm_delete", json!({ "filename": "k.txt" }));
    let sleepers: Vec<String> = (0..3)
        .map(|_| client.create_task("slow_compute", json!({ "seconds": 3000, "label": "late" })))
        .collect();
    let trip = client.create_task("trip", json!({ "broken_release": false }));
    inspector.wait_until(&asking, |task| task["status"] == "input_required");
    inspector.wait_until(&trip, |task| task["statusMessage"] == "booked");

    // Without the token, or with another, nothing is read and nothing changes.
    for authorization in [None, Some("Bearer not-the-token"), Some("Basic abc")] {
        for (method, path) in [
            ("GET", "/api/tasks".to_owned()),
            ("GET", format!("/api/tasks/{trip}")),
            ("GET", format!("/api/tasks/{trip}/events")),
            ("POST", format!("/api/tasks/{trip}/cancel")),
            ("POST", format!("/api/tasks/{}/wake", sleepers[0])),
        ] {
            let response = inspector.request_as(authorization, method, &path, b"");
            assert_eq!(response.status, 401, "{method} {path} as {authorization:?}");
            assert!(response.header("www-authenticate").is_some());
            assert!(!body_text(&response).contains(&trip), "nothing is shown");
        }
    }
    assert_eq!(
        inspector.get(&format!("/api/tasks/{trip}"))["status"],
        "working"
    );
    let sleeper = inspector.get(&format!("/api/tasks/{}", sleepers[0]));
    assert_eq!(sleeper["status"], "working", "{sleeper}");

    // Listing: every task, a page at a time, oldest first and none twice; filters. Tasks
    // created in one millisecond are ordered by id, so the order is checked on what the
    // listing says of each, not on the order this test created them in.
    let everything = inspector.list("", 2);
    let positions: Vec<(String, String)> = everything.iter().map(listing_position).collect();
    assert!(
        positions.windows(2).all(|pair| pair[0] < pair[1]),
        "oldest first, then by id, none twice: {positions:?}"
    );
    let listed: Vec<String> = everything.iter().map(task_id).collect();
    let created_at = |id: &String| {
        let at = listed.iter().position(|seen| seen == id);
        let task = &everything[at.unwrap_or_else(|| panic!("{id} is listed: {listed:?}"))];
        listing_position(task).0
    };
    let in_creation_order: Vec<String> = std::iter::once(&asking)
        .chain(&sleepers)
        .chain([&trip])
        .map(created_at)
        .collect();
    assert!(
        in_creation_order.is_sorted(),
        "createdAt follows creation: {in_creation_order:?}"
    );
    assert_eq!(
        inspector.ids("status=input_required", 100),
        [asking.as_str()]
    );
    let mut sleepers_in_order = sleepers.clone();
    sleepers_in_order.sort_by_key(|id| (created_at(id), id.clone()));
    let computing = inspector.ids("tool=slow_compute&status=working", 1);
    assert_eq!(computing, sleepers_in_order);
    assert_eq!(
        inspector.ids("newer_than=1h&tool=trip", 100),
        [trip.as_str()]
    );
    assert!(inspector.ids("older_than=1h", 100).is_empty());

    // A task's detail: its input, journal, and the question it waits on.
    let detail = inspector.get(&format!("/api/tasks/{trip}"));
    assert_eq!(detail["input"], json!({ "broken_release": false }));
    let book = &detail["journal"][0];
    assert_eq!(
        (&book["key"], &book["kind"], &book["status"]),
        (&json!("book"), &json!("do"), &json!("completed"))
    );
    assert_eq!(book["result"], "room-7");
    assert!(detail["history"][0]["event"] == "created", "{detail}");
    let question = inspector.get(&format!("/api/tasks/{asking}"));
    assert_eq!(question["inputs"][0]["key"], "confirm", "{question}");
    assert_eq!(question["inputs"][0]["answered"], false);

    // Answer: the task takes it and completes. Its event stream, opened before, tells each
    // change as it happens and ends once the task has ended.
    let mut events = inspector.events(&asking);
    let now = events.next_message().expect("the task as it is");
    assert_eq!(now["status"], "input_required", "{now}");
    let answer = json!({ "inputResponses": {
        "confirm": { "action": "accept", "content": { "confirm": true } } } });
    inspector.post(&format!("/api/tasks/{asking}/answer"), &answer);
    let mut pushed = Vec::new();
    while let Some(change) = events.next_message() {
        pushed.push(change["status"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(
        pushed.last().map(String::as_str),
        Some("completed"),
        "{pushed:?}"
    );
    assert!(
        pushed
            .iter()
            .all(|status| status == "working" || status == "completed")
    );
    let done = inspector.get(&format!("/api/tasks/{asking}"));
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted=true",
        "{done}"
    );

    // Wake: the 50-minute sleep ends now, and only that task's.
    inspector.post(&format!("/api/tasks/{}/wake", sleepers[0]), &Value::Null);
    let woken = inspector.wait_until(&sleepers[0], |task| task["status"] == "completed");
    assert_eq!(woken["result"]["content"][0]["text"], "computed late");
    assert_eq!(
        inspector.get(&format!("/api/tasks/{}", sleepers[1]))["status"],
        "working"
    );

    // Cancel: the trip's release runs, then it is cancelled.
    inspector.post(&format!("/api/tasks/{trip}/cancel"), &Value::Null);
    let cancelled = inspector.wait_until(&trip, |task| task["status"] == "cancelled");
    let release = cancelled["journal"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["key"] == "$cleanup:release")
        .expect("the release is journaled");
    assert_eq!(release["status"], "completed", "{cancelled}");

    // Bad input: refused, saying what to send, with nothing changed.
    for (method, path, body, status) in [
        ("GET", "/api/tasks?status=done", "", 400),
        ("GET", "/api/tasks?limit=1000", "", 400),
        ("GET", "/api/tasks?cursor=nonsense", "", 400),
        ("GET", "/api/tasks?colour=red", "", 400),
        ("GET", "/api/tasks/no-such-task", "", 404),
        ("GET", "/api/tasks/no-such-task/events", "", 404),
        ("POST", "/api/tasks/no-such-task/cancel", "", 404),
        ("DELETE", "/api/tasks", "", 405),
        ("GET", "/api/nothing-here", "", 404),
    ] {
        let response = inspector.request(method, path, body.as_bytes());
        assert_eq!(
            response.status,
            status,
            "{method} {path}: {}",
            body_text(&response)
        );
        assert!(response.json()["error"].is_string());
    }
    let second = &sleepers[1];
    for (path, body) in [
        (format!("/api/tasks/{second}/explode"), ""),
        (format!("/api/tasks/{second}/wake"), "{\"now\": true}"),
        (format!("/api/tasks/{second}/answer"), "not json"),
        (format!("/api/tasks/{second}/answer"), "{\"confirm\": {}}"),
        (
            format!("/api/tasks/{second}/answer"),
            "{\"inputResponses\": 7}",
        ),
    ] {
        let response = inspector.request("POST", &path, body.as_bytes());
        assert!(
            matches!(response.status, 400 | 404),
            "POST {path} {body}: {} {}",
            response.status,
            body_text(&response)
        );
    }
    assert_eq!(
        inspector.get(&format!("/api/tasks/{second}"))["status"],
        "working"
    );
}
