//! A test Worker: `GET /conformance/<name>` runs the store conformance suite on the SQLite
//! storage of the Durable Object `<name>` and answers `ok` (a failing check panics, and the
//! request fails with the check's name in the log).

use durable_mcp::cloudflare::DurableObjectStore;
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
        ["conformance", name] => {
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

    async fn fetch(&self, _request: Request) -> Result<Response> {
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
