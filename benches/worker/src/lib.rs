//! The Worker `cargo xtask bench` measures under workerd: the conformance fixtures served by
//! durable-mcp (`/mcp`, each task in a TaskRunner object) beside `Floor`, a Durable Object that
//! does the least a request or a step could: the floors the figures are compared with.
//!
//! - `GET /floor/ping/<name>`: a round trip to the object `<name>`, which answers at once.
//! - `POST /floor/insert/<name>?n=<n>`: the object inserts `<n>` rows, one statement each; with
//!   `alarm=1` it also sets its alarm (an hour ahead), as a task's creation does.
//! - `POST /floor/echo/<name>`: the object reads the JSON body and answers it back.
//! - `POST /floor/read/<name>`: the Worker reads the JSON body, makes the round trip of `ping`,
//!   and answers the body back: what a `tasks/get` pays at least, besides the round trip.
//! - `GET /floor/rpc-ping/<name>`: the Worker calls the object through Durable Object RPC, as
//!   it reaches a task's object, and the object answers at once: the hop of a poll.
//! - `GET /floor/rpc-sql/<name>`: the same call, and the object runs three reads by primary
//!   key, as many as a task's control state takes: what a poll would pay for SQL.
//! - `GET /floor/none`: the Worker answers at once, touching no object.

// The Worker's exports come from `#[durable_object]` and `#[event]` in a private module (the
// generated items carry no docs).
#[cfg(target_arch = "wasm32")]
mod worker {
    use std::panic::AssertUnwindSafe;
    use worker::js_sys::Promise;
    use worker::wasm_bindgen::{self, JsValue, prelude::wasm_bindgen};

    use worker::wasm_bindgen_futures::{JsFuture, future_to_promise};
    use worker::{DurableObject, Env, Request, Response, Result, State, web_sys};

    durable_mcp::cloudflare::task_runner!(
        /// The fixtures' TaskRunner.
        pub struct TaskRunner => |_env: &Env| conformance_server::server()
    );

    /// The floor: a Durable Object with nothing in the way.
    #[worker::durable_object]
    #[derive(Debug)]
    pub struct Floor {
        state: State,
    }

    impl DurableObject for Floor {
        fn new(state: State, _env: Env) -> Self {
            Floor { state }
        }

        async fn alarm(&self) -> Result<Response> {
            // The insert floor's alarm only needs to be set; it is due after the bench ends.
            Response::ok("")
        }

        async fn fetch(&self, mut request: Request) -> Result<Response> {
            let url = request.url()?;
            if url.path().starts_with("/floor/echo/") {
                let body: serde_json::Value = request.json().await?;
                return Response::from_json(&body);
            }
            if !url.path().starts_with("/floor/insert/") {
                return Response::ok("");
            }
            let n: u32 = url
                .query_pairs()
                .find(|(key, _)| key == "n")
                .and_then(|(_, value)| value.parse().ok())
                .unwrap_or(0);
            let sql = self.rows_table()?;
            // About the size of a no-op step's row.
            let body = "x".repeat(120);
            for _ in 0..n {
                sql.exec(
                    "INSERT INTO rows (body) VALUES (?)",
                    vec![body.as_str().into()],
                )?;
            }
            if url
                .query_pairs()
                .any(|(key, value)| key == "alarm" && value == "1")
            {
                let storage = self.state.storage();
                storage
                    .set_alarm(std::time::Duration::from_secs(3600))
                    .await?;
            }
            Response::ok("")
        }
    }

    impl Floor {
        fn rows_table(&self) -> Result<worker::SqlStorage> {
            let sql = self.state.storage().sql();
            sql.exec(
                "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
                None,
            )?;
            Ok(sql)
        }

        /// Three reads by primary key, each row brought back: as many statements as a task's
        /// control state (its row, its pending steps, its inputs) takes.
        fn three_reads(&self) -> Result<()> {
            let sql = self.rows_table()?;
            sql.exec(
                "INSERT OR IGNORE INTO rows (id, body) VALUES (1, ?)",
                vec!["x".repeat(400).into()],
            )?;
            for _ in 0..3 {
                let rows: Vec<serde_json::Value> = sql
                    .exec("SELECT * FROM rows WHERE id = 1", None)?
                    .to_array()?;
                drop(rows);
            }
            Ok(())
        }
    }

    // The floor answers the RPC method durable-mcp's objects have, so that the framework makes
    // its class an RPC target as it does theirs. Like a TaskRunner answering a poll, it answers
    // synchronously, with no promise.
    #[wasm_bindgen]
    impl Floor {
        /// `ping` answers at once; `sql` makes [`Floor::three_reads`] first.
        #[wasm_bindgen(js_name = durableMcpCall)]
        pub fn durable_mcp_call(&self, call: String) -> std::result::Result<String, JsValue> {
            if call == "sql" {
                self.three_reads()
                    .map_err(|error| JsValue::from_str(&error.to_string()))?;
            }
            Ok(String::new())
        }
    }

    #[wasm_bindgen]
    extern "C" {
        /// A stub of the floor, called through Durable Object RPC.
        type FloorStub;

        #[wasm_bindgen(method, catch, js_name = durableMcpCall)]
        fn durable_mcp_call(this: &FloorStub, call: &str) -> std::result::Result<Promise, JsValue>;
    }

    /// One RPC call to the floor `name`.
    async fn rpc(env: &Env, name: &str, call: &str) -> Result<Response> {
        let stub: FloorStub = env.durable_object("FLOOR")?.get_by_name(name)?.into_rpc();
        let promise = stub.durable_mcp_call(call).map_err(worker::Error::from)?;
        JsFuture::from(promise).await.map_err(worker::Error::from)?;
        Response::ok("")
    }

    /// The Worker's fetch handler: the floors, and durable-mcp's endpoint as the examples
    /// serve it (`durable_mcp::cloudflare::respond`).
    #[wasm_bindgen(js_name = fetch)]
    pub fn fetch(request: web_sys::Request, env: Env, _context: JsValue) -> Promise {
        let url = request.url();
        let path = url.split_once("://").map_or("", |(_, rest)| rest);
        let path = path.find('/').map_or("/", |at| &path[at..]);
        let path = path.split('?').next().unwrap_or(path);
        let Some(rest) = path.strip_prefix("/floor/").map(str::to_owned) else {
            return durable_mcp::cloudflare::respond(
                request,
                env,
                durable_mcp::cloudflare::Endpoint::DEFAULT,
                conformance_server::server,
            );
        };
        future_to_promise(AssertUnwindSafe(async move {
            let response = floor(&rest, request, &env)
                .await
                .or_else(|error| Response::error(error.to_string(), 500))?;
            Ok(web_sys::Response::from(response).into())
        }))
    }

    async fn floor(rest: &str, request: web_sys::Request, env: &Env) -> Result<Response> {
        let name = rest.rsplit('/').next().unwrap_or_default().to_owned();
        if rest == "none" {
            return Response::ok("");
        }
        if rest.starts_with("rpc-ping/") {
            return rpc(env, &name, "ping").await;
        }
        if rest.starts_with("rpc-sql/") {
            return rpc(env, &name, "sql").await;
        }
        let request = Request::from(request);
        let stub = env.durable_object("FLOOR")?.get_by_name(&name)?;
        if rest.starts_with("read/") {
            let mut request = request;
            let body: serde_json::Value = request.json().await?;
            drop(body);
            return stub
                .fetch_with_str(&format!("https://floor/floor/ping/{name}"))
                .await;
        }
        stub.fetch_with_request(request).await
    }
}
