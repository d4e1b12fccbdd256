//! A test Worker: `GET /conformance/<name>` runs the store conformance suite on the SQLite
//! storage of the Durable Object `<name>` and answers `ok` (a failing check panics, and the
//! request fails with the check's name in the log). `GET /upgrade/<name>` checks that the store
//! brings tables an earlier version created to the current schema, keeping their rows.

use durable_mcp::__internals::schema;
use durable_mcp::__internals::{NewTask, control};
use durable_mcp::Timestamp;
use durable_mcp::__internals::DurableObjectStore;
use durable_mcp::store::LoadScope;
use durable_mcp::store::Store;
use durable_mcp::testing::store_conformance;
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object, event};

#[event(fetch)]
async fn fetch(request: Request, env: Env, _ctx: worker::Context) -> Result<Response> {
    let path = request.path();
    match path
        .trim_start_matches('/')
        .split('/')
        .collect::<Vec<_>>()
        .as_slice()
    {
        [""] => Response::ok("ready"),
        ["conformance" | "upgrade", name] => {
            let stub = env.durable_object("STORE_CHECK")?.get_by_name(name)?;
            stub.fetch_with_request(request).await
        }
        _ => Response::error("not found", 404),
    }
}

/// One object per run; its storage is wiped before every check.
#[durable_object]
pub struct StoreCheck {
    state: State,
}

impl DurableObject for StoreCheck {
    fn new(state: State, _env: Env) -> Self {
        StoreCheck { state }
    }

    async fn fetch(&self, request: Request) -> Result<Response> {
        if request.path().starts_with("/upgrade/") {
            self.upgrade();
            return Response::ok("ok");
        }
        store_conformance(|| {
            let storage = self.state.storage();
            let sql = storage.sql();
            for table in ["input_requests", "steps", "task"] {
                sql.exec(&format!("DROP TABLE IF EXISTS {table}"), None)
                    .expect("drop a table");
            }
            DurableObjectStore::open(storage)
        });
        Response::ok("ok")
    }
}

impl StoreCheck {
    /// Writes the tables as the version before listing did (no `list_scope`, no
    /// `code_version`) with one task, then opens the store: the task reads back unlisted and
    /// without a code version, and a new task is listed with its own.
    fn upgrade(&self) {
        let storage = self.state.storage();
        let sql = storage.sql();
        for table in ["input_requests", "steps", "task"] {
            sql.exec(&format!("DROP TABLE IF EXISTS {table}"), None)
                .expect("drop a table");
        }
        let old_schema = schema::CREATE_SCHEMA.replace(
            ",\n    list_scope TEXT,\n    code_version TEXT",
            "",
        );
        assert_ne!(
            old_schema,
            schema::CREATE_SCHEMA,
            "the old schema lacks list_scope"
        );
        sql.exec(&old_schema, None).expect("the old schema");
        sql.exec(
            "INSERT INTO task (task_id, tool_name, input, status, status_published, created_at, \
             last_updated_at, poll_interval_ms, cancel_requested, run_attempt, generation, \
             cut_next_sleep, version) \
             VALUES ('old', 'tool', '{}', 'working', 0, 5, 5, 1000, 0, 0, 0, 0, 0)",
            None,
        )
        .expect("an old row");
        let store = DurableObjectStore::open(storage);
        let old = store
            .load("old", LoadScope::Full)
            .expect("load")
            .expect("kept");
        assert_eq!(old.task.list_scope, None);
        assert_eq!(old.task.code_version, None);
        let new = NewTask {
            task_id: "new".into(),
            tool_name: "tool".into(),
            input: "{}".into(),
            ttl: None,
            poll_interval: std::time::Duration::from_secs(1),
            principal: None,
            list_scope: Some("principal:ada".into()),
            code_version: Some("2.0.0".into()),
            parent: None,
        };
        store
            .create(&control::new_task_record(new, Timestamp(9)))
            .expect("create");
        let created = store.load("new", LoadScope::Control).expect("load");
        let created = created.expect("stored");
        assert_eq!(created.task.code_version.as_deref(), Some("2.0.0"));
        let listed = store.list_tasks("principal:ada", None, 10).expect("list");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].task_id, "new");
        let reopened = DurableObjectStore::open(self.state.storage());
        assert_eq!(
            reopened
                .list_tasks("principal:ada", None, 10)
                .expect("list")
                .len(),
            1
        );
        let indexes = sql
            .exec(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'task_list'",
                None,
            )
            .expect("read the catalogue")
            .raw()
            .count();
        assert_eq!(indexes, 1, "the listing index exists");
    }
}
