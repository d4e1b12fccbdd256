//! Listing tasks on the Cloudflare host, under workerd (`wrangler dev`), through the Worker's
//! task service as the router calls it (the test Worker `tests/worker-list`): one TaskIndex
//! object per scope, each listed task's snapshot from its own object, gone ids forgotten, a
//! purged task's id removed by its object, and a Worker without the index binding.

use std::path::Path;
use std::time::{Duration, Instant};

use durable_mcp_tests::workerd::{WorkerProcess, build_worker_once, one_worker_at_a_time};
use serde_json::Value;

/// The Worker crate.
const WORKER_CRATE: &str = "tests/worker-list";

const ADA: &str = "principal:ada";

fn start(state: &Path, config: &str) -> WorkerProcess {
    let dir = build_worker_once(WORKER_CRATE);
    WorkerProcess::start_with_config(&dir, config, state, &[])
}

/// Creates a task of `tool` (in `scope`, with the id `id`); the answer as JSON.
fn create(worker: &WorkerProcess, tool: &str, scope: Option<&str>, id: Option<&str>) -> Value {
    let mut path = format!("/create?tool={tool}");
    if let Some(scope) = scope {
        path.push_str(&format!("&scope={scope}"));
    }
    if let Some(id) = id {
        path.push_str(&format!("&id={id}"));
    }
    let response = worker.post(&path, &[]);
    assert_eq!(response.status, 200, "{path}");
    response.json()
}

fn created(worker: &WorkerProcess, tool: &str, scope: Option<&str>) -> String {
    let answer = create(worker, tool, scope, None);
    answer["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("not created: {answer}"))
        .to_owned()
}

fn list(worker: &WorkerProcess, scope: &str, limit: usize, cursor: Option<&str>) -> Value {
    let mut path = format!("/list?scope={scope}&limit={limit}");
    if let Some(cursor) = cursor {
        path.push_str(&format!("&cursor={cursor}"));
    }
    let response = worker.get(&path);
    assert_eq!(response.status, 200, "{path}");
    response.json()
}

fn ids(page: &Value) -> Vec<String> {
    page["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("not a page: {page}"))
        .iter()
        .map(|task| task["taskId"].as_str().expect("taskId").to_owned())
        .collect()
}

/// Every page of `scope`, following the cursors.
fn walk(worker: &WorkerProcess, scope: &str, limit: usize) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = list(worker, scope, limit, cursor.as_deref());
        pages.push(ids(&page));
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return pages,
        }
    }
}

/// The task ids in the index tables (`listed`) of the Durable Object databases in a
/// `wrangler dev` state directory, one list per object that has the table.
fn index_tables(state: &Path) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let Ok(namespaces) = std::fs::read_dir(state.join("v3/do")) else {
        return found;
    };
    for namespace in namespaces.flatten() {
        for file in std::fs::read_dir(namespace.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = file.path();
            let is_object = path.extension().is_some_and(|e| e == "sqlite")
                && path.file_stem().is_some_and(|stem| stem != "metadata");
            if !is_object {
                continue;
            }
            let connection = rusqlite::Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
            let has_table: i64 = connection
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'listed'",
                    [],
                    |row| row.get(0),
                )
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            if has_table == 0 {
                continue;
            }
            let mut statement = connection
                .prepare("SELECT task_id FROM listed ORDER BY created_at, task_id")
                .unwrap();
            let ids = statement
                .query_map([], |row| row.get(0))
                .unwrap()
                .collect::<Result<Vec<String>, _>>()
                .unwrap();
            found.push(ids);
        }
    }
    found
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "still waiting: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_scope_pages_oldest_first_sees_new_tasks_and_loses_purged_and_orphaned_ones() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let worker = start(state.path(), "wrangler.toml");

    let mut expected: Vec<String> = (0..5)
        .map(|_| created(&worker, "quick", Some(ADA)))
        .collect();
    let bob = created(&worker, "quick", Some("principal:bob"));
    let unlisted = created(&worker, "quick", None);

    let first = list(&worker, ADA, 2, None);
    assert_eq!(ids(&first), expected[..2], "{first}");
    assert_eq!(first["tasks"][0]["status"], "completed", "{first}");
    let cursor = first["nextCursor"].as_str().expect("more pages").to_owned();
    // Created between two pages: listed last.
    expected.push(created(&worker, "quick", Some(ADA)));
    let second = list(&worker, ADA, 2, Some(&cursor));
    assert_eq!(ids(&second), expected[2..4]);
    let pages = walk(&worker, ADA, 2);
    assert_eq!(
        pages.concat(),
        expected,
        "every task once, in creation order"
    );
    assert_eq!(pages.len(), 3, "a full last page says it is the last");
    assert_eq!(walk(&worker, "principal:bob", 10), [vec![bob]]);
    assert!(!walk(&worker, ADA, 10).concat().contains(&unlisted));
    assert_eq!(walk(&worker, "principal:eve", 10), [Vec::<String>::new()]);

    // A creation that fails after its id was recorded (no such tool) leaves an orphan id in
    // the index: the listing skips it and tells the index to forget it.
    let refused = create(&worker, "no_such_tool", Some(ADA), Some("orphan-1"));
    assert!(refused["error"]["message"].is_string(), "{refused}");
    let listed_ids = |state: &Path| index_tables(state).concat();
    assert!(listed_ids(state.path()).contains(&"orphan-1".to_owned()));
    assert_eq!(walk(&worker, ADA, 10).concat(), expected);
    assert!(
        !listed_ids(state.path()).contains(&"orphan-1".to_owned()),
        "the orphan id is forgotten"
    );

    // A short-lived task is listed, then purged by its object, which removes its id; the
    // index left empty deletes its storage.
    let short = created(&worker, "short_lived", Some("session:s1"));
    assert_eq!(walk(&worker, "session:s1", 10), [vec![short.clone()]]);
    assert!(listed_ids(state.path()).contains(&short));
    wait_for("the short-lived task is purged", || {
        worker.get(&format!("/get?id={short}")).json()["error"]["code"] == -32602
    });
    wait_for("the emptied index deletes its storage", || {
        !listed_ids(state.path()).contains(&short)
    });
    assert_eq!(
        index_tables(state.path()).len(),
        2,
        "only ada's and bob's indexes keep a table"
    );
    assert_eq!(walk(&worker, "session:s1", 10), [Vec::<String>::new()]);

    let bad = list(&worker, ADA, 10, Some("not-a-cursor"));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[test]
fn without_the_index_binding_tasks_are_created_and_listing_names_the_binding() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let worker = start(state.path(), "wrangler.no-index.toml");
    let plain = created(&worker, "quick", None);
    let scoped = created(&worker, "quick", Some(ADA));
    for id in [&plain, &scoped] {
        let task = worker.get(&format!("/get?id={id}")).json();
        assert_eq!(task["taskId"], id.as_str(), "{task}");
    }
    let refused = list(&worker, ADA, 10, None);
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("TASK_INDEX") && message.contains("new_sqlite_classes"),
        "{message}"
    );
}
