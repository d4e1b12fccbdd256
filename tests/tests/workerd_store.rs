//! The store conformance suite on a Durable Object's SQLite storage, under workerd: the test
//! Worker `tests/worker-store` runs every check inside a Durable Object, then the upgrade of
//! tables an earlier version created.

use durable_mcp_tests::workerd::{WorkerProcess, build_worker, workspace_root};

#[test]
fn the_durable_object_store_passes_the_store_conformance_suite() {
    let dir = workspace_root().join("tests/worker-store");
    build_worker(&dir);
    let state = tempfile::tempdir().unwrap();
    let worker = WorkerProcess::start(&dir, state.path());
    let response = worker.get("/conformance/run-1");
    assert_eq!(
        (
            response.status,
            String::from_utf8_lossy(&response.body).into_owned()
        ),
        (200, "ok".to_owned()),
        "the suite failed inside the Durable Object; wrangler's output above names the check"
    );
    let upgraded = worker.get("/upgrade/run-2");
    assert_eq!(
        (
            upgraded.status,
            String::from_utf8_lossy(&upgraded.body).into_owned()
        ),
        (200, "ok".to_owned()),
        "tables of an earlier version were not upgraded; wrangler's output above says why"
    );
}
