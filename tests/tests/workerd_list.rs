//! Listing tasks on the Cloudflare host, under workerd (`wrangler dev`), through the Worker's
//! task service as the router calls it (the test Worker `tests/worker-list`): one TaskIndex
//! object per scope, each listed task's snapshot from its own object, gone ids forgotten, a
//! purged task's id removed by its object, and a Worker without the index binding.

use std::path::Path;

use durable_mcp_tests::wait;
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
    created_at(worker, tool, scope).1
}

/// A time in milliseconds and a task id: a task's `createdAt` and id, or an index entry (the
/// time the index recorded the id, and the id), which is a task's position in its listing.
type Stamped = (u64, String);

/// The `createdAt` and id of a task the Worker answered with (created or listed).
fn stamped(task: &Value) -> Stamped {
    let id = task["taskId"].as_str();
    match (task["createdAt"].as_u64(), id) {
        (Some(at), Some(id)) => (at, id.to_owned()),
        _ => panic!("no createdAt and taskId: {task}"),
    }
}

/// Creates a task of `tool` (in `scope`); its `createdAt` and id.
fn created_at(worker: &WorkerProcess, tool: &str, scope: Option<&str>) -> Stamped {
    stamped(&create(worker, tool, scope, None))
}

fn sorted(mut items: Vec<Stamped>) -> Vec<Stamped> {
    items.sort();
    items
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

/// The `createdAt` and id of each task of a page, as listed.
fn listed(page: &Value) -> Vec<Stamped> {
    page["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("not a page: {page}"))
        .iter()
        .map(stamped)
        .collect()
}

fn ids(items: &[Stamped]) -> Vec<String> {
    items.iter().map(|(_, id)| id.clone()).collect()
}

/// Every page of `scope`, following the cursors: each task's `createdAt` and id.
fn walk_stamped(worker: &WorkerProcess, scope: &str, limit: usize) -> Vec<Vec<Stamped>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = list(worker, scope, limit, cursor.as_deref());
        pages.push(listed(&page));
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return pages,
        }
    }
}

/// Every page of `scope` as its task ids, following the cursors.
fn walk(worker: &WorkerProcess, scope: &str, limit: usize) -> Vec<Vec<String>> {
    let pages = walk_stamped(worker, scope, limit);
    pages.iter().map(|page| ids(page)).collect()
}

/// The entries of the index tables (`listed`) of the Durable Object databases in a
/// `wrangler dev` state directory, in order, one list per object that has the table.
fn index_tables(state: &Path) -> Vec<Vec<Stamped>> {
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
                .prepare("SELECT created_at, task_id FROM listed ORDER BY created_at, task_id")
                .unwrap();
            let entries = statement
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .unwrap()
                .collect::<Result<Vec<Stamped>, _>>()
                .unwrap();
            found.push(entries);
        }
    }
    found
}

/// The entries of the index that holds `task_id`: where each task of its scope is listed.
fn index_holding(state: &Path, task_id: &str) -> Vec<Stamped> {
    index_tables(state)
        .into_iter()
        .find(|entries| entries.iter().any(|(_, id)| id == task_id))
        .unwrap_or_else(|| panic!("no index holds {task_id}"))
}

/// The index entry of `task_id` among `entries`.
fn entry(entries: &[Stamped], task_id: &str) -> Stamped {
    entries
        .iter()
        .find(|(_, id)| id == task_id)
        .cloned()
        .unwrap_or_else(|| panic!("{task_id} is not in the index: {entries:?}"))
}

#[test]
fn a_scope_pages_oldest_first_sees_new_tasks_and_loses_purged_and_orphaned_ones() {
    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let worker = start(state.path(), "wrangler.toml");

    // Ada's tasks, in the order they were created, with the `createdAt` each was created with.
    let mut by_ada: Vec<Stamped> = (0..5)
        .map(|_| created_at(&worker, "quick", Some(ADA)))
        .collect();
    let bob = created(&worker, "quick", Some("principal:bob"));
    let unlisted = created(&worker, "quick", None);
    // A listing is ordered by when the scope's index recorded each id (to the millisecond, just
    // before the task was created), then by id: tasks recorded in one millisecond are listed by
    // id, so the pages are checked against the index's entries, not the order of creation.
    let oldest = by_ada[0].1.clone();
    let index_of_ada = || index_holding(state.path(), &oldest);

    let first = list(&worker, ADA, 2, None);
    let entries = index_of_ada();
    assert_eq!(ids(&listed(&first)), ids(&entries[..2]), "{first}");
    assert_eq!(first["tasks"][0]["status"], "completed", "{first}");
    let cursor = first["nextCursor"].as_str().expect("more pages").to_owned();
    // Created between two pages: listed after the first page (recorded later).
    let after_first = entries[1].clone();
    by_ada.push(created_at(&worker, "quick", Some(ADA)));
    let second = list(&worker, ADA, 2, Some(&cursor));
    let entries = index_of_ada();
    let next: Vec<Stamped> = entries
        .iter()
        .filter(|entry| **entry > after_first)
        .take(2)
        .cloned()
        .collect();
    assert_eq!(ids(&listed(&second)), ids(&next), "{second}");

    let at: Vec<u64> = by_ada.iter().map(|(at, _)| *at).collect();
    assert!(at.is_sorted(), "createdAt follows creation: {by_ada:?}");
    let mut recorded = ids(&entries);
    recorded.sort();
    let mut created_ids = ids(&by_ada);
    created_ids.sort();
    assert_eq!(recorded, created_ids, "ada's index holds her tasks");
    let pages = walk_stamped(&worker, ADA, 2);
    let listing = pages.concat();
    let positions: Vec<Stamped> = listing.iter().map(|(_, id)| entry(&entries, id)).collect();
    assert!(
        positions.windows(2).all(|pair| pair[0] < pair[1]),
        "strictly ordered by (the index's createdAt, taskId), none twice: {positions:?}"
    );
    assert_eq!(
        sorted(listing),
        sorted(by_ada.clone()),
        "every task created once, with the createdAt it was created with"
    );
    assert_eq!(pages.len(), 3, "a full last page says it is the last");
    let expected = ids(&entries);
    assert_eq!(walk(&worker, "principal:bob", 10), [vec![bob]]);
    assert!(!walk(&worker, ADA, 10).concat().contains(&unlisted));
    assert_eq!(walk(&worker, "principal:eve", 10), [Vec::<String>::new()]);

    // A creation that fails after its id was recorded (no such tool) leaves an orphan id in
    // the index: the listing skips it and tells the index to forget it.
    let refused = create(&worker, "no_such_tool", Some(ADA), Some("orphan-1"));
    assert!(refused["error"]["message"].is_string(), "{refused}");
    let listed_ids = |state: &Path| ids(&index_tables(state).concat());
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
    wait::until(
        "the short-lived task to be purged",
        || worker.get(&format!("/get?id={short}")).json(),
        |answer| answer["error"]["code"] == -32602,
    );
    wait::until(
        "the emptied index to delete its storage",
        || Value::from(listed_ids(state.path())),
        |listed| {
            listed
                .as_array()
                .is_some_and(|ids| ids.iter().all(|id| *id != *short))
        },
    );
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
