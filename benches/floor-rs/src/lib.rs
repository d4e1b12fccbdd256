//! The Rust floor of `cargo xtask bench cold`: a Worker written with workers-rs (the `worker`
//! crate) and built with worker-build as the bench Worker is, with one SQLite Durable Object
//! and nothing else (no durable-mcp, no serde_json, no tracing). It mirrors the JavaScript
//! floor (`benches/floor-js`), so a fresh isolate's first requests here are the least a Rust
//! Worker's can cost: what V8 compiles and runs for the `worker` crate and wasm-bindgen's glue
//! alone, beside the same requests in plain JS.
//!
//! - `POST /insert/<name>`: the Worker calls `insert(body)` on the object `<name>` with the
//!   request's body (the bench sends 120 bytes of text); the object inserts it as one row, one
//!   statement, into a table it creates when it is constructed.
//! - `GET /read/<name>`: the Worker calls `read()` on the object `<name>`, which answers the
//!   body of the row inserted last (empty if none).
//!
//! As in the JS floor and as durable-mcp reaches its objects, the Worker calls the object
//! through Durable Object RPC, not its `fetch`: a call carries the text alone, with no HTTP
//! request or response around it. workers-rs does not make an object's class an RPC target
//! (the classes wasm-bindgen exports extend nothing, and the runtime serves RPC only to classes
//! that extend `DurableObject`), so a few lines of JavaScript bundled by worker-build do, as
//! durable-mcp's own module does.

// Natively the crate is empty: it is a Worker only. The exports come from `#[durable_object]`
// and `#[event]` in a private module (the generated items carry no docs).
#[cfg(target_arch = "wasm32")]
mod floor {
    use worker::js_sys::Promise;
    use worker::wasm_bindgen::{self, JsValue, prelude::wasm_bindgen};
    use worker::wasm_bindgen_futures::JsFuture;
    use worker::{
        Context, DurableObject, Env, Method, Request, Response, Result, SqlStorage,
        SqlStorageValue, State, console_error, durable_object, event,
    };

    // Makes `RustFloor` extend `DurableObject`, so that the runtime serves it RPC. The runtime
    // reads the classes once the script's top level and its queued microtasks have run; at this
    // module's own evaluation wasm-bindgen's glue (which imports it) has not defined the class
    // yet, hence the microtask.
    #[wasm_bindgen(inline_js = r#"
import { DurableObject } from "cloudflare:workers";
import * as glue from "../../index.js";

queueMicrotask(() => {
  Object.setPrototypeOf(glue.RustFloor.prototype, DurableObject.prototype);
  Object.setPrototypeOf(glue.RustFloor, DurableObject);
});

export function rpc_target() {
  return glue.RustFloor.prototype instanceof DurableObject;
}
"#)]
    extern "C" {
        /// Whether `RustFloor` extends `DurableObject` (answers RPC).
        fn rpc_target() -> bool;
    }

    #[wasm_bindgen]
    extern "C" {
        /// A stub of the floor, called through Durable Object RPC.
        type FloorStub;

        /// `insert(body)` on the object; resolves once the row is in.
        #[wasm_bindgen(method, catch)]
        fn insert(this: &FloorStub, body: &str) -> std::result::Result<Promise, JsValue>;

        /// `read()` on the object; resolves to the last row's body.
        #[wasm_bindgen(method, catch)]
        fn read(this: &FloorStub) -> std::result::Result<Promise, JsValue>;
    }

    /// The floor's object: one SQLite table of rows.
    #[durable_object]
    #[derive(Debug)]
    pub struct RustFloor {
        sql: SqlStorage,
    }

    impl DurableObject for RustFloor {
        fn new(state: State, _env: Env) -> Self {
            // Also what keeps the module above in the build: wasm-bindgen bundles an inline
            // module only if one of its functions is called.
            if !rpc_target() {
                console_error!("RustFloor does not extend DurableObject: RPC calls to it fail");
            }
            let sql = state.storage().sql();
            // As the JS floor's constructor. A failure here fails the first insert, which the
            // bench reports.
            let created = sql.exec(
                "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
                None,
            );
            if let Err(error) = created {
                console_error!("RustFloor could not create its table: {error}");
            }
            RustFloor { sql }
        }

        async fn fetch(&self, _request: Request) -> Result<Response> {
            // The Worker calls the object through RPC only.
            Response::error("not found", 404)
        }
    }

    // The object's RPC methods. They answer synchronously, as the JS floor's do: SQLite storage
    // is synchronous, and the runtime wraps a plain return value for the caller.
    #[wasm_bindgen]
    impl RustFloor {
        /// Inserts `body` as one row, one statement.
        pub fn insert(&self, body: String) -> std::result::Result<(), JsValue> {
            let values = vec![SqlStorageValue::from(body)];
            self.sql
                .exec("INSERT INTO rows (body) VALUES (?)", values)?;
            Ok(())
        }

        /// The body of the row inserted last; empty if none.
        pub fn read(&self) -> std::result::Result<String, JsValue> {
            let last = self
                .sql
                .exec("SELECT body FROM rows ORDER BY id DESC LIMIT 1", None)?;
            // Read as raw values: deserializing rows would bring serde's code into the floor.
            match last.raw().next().transpose()?.as_deref() {
                Some([SqlStorageValue::String(body)]) => Ok(body.clone()),
                _ => Ok(String::new()),
            }
        }
    }

    /// The Worker: the floor's two routes, anything else not found.
    #[event(fetch)]
    async fn fetch(mut request: Request, env: Env, _context: Context) -> Result<Response> {
        let path = request.path();
        let mut parts = path.split('/').skip(1);
        let (Some(route), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
            return Response::error("not found", 404);
        };
        match (route, request.method()) {
            ("insert", Method::Post) if !name.is_empty() => {
                let body = request.text().await?;
                call(stub(&env, name)?.insert(&body)).await?;
                Response::ok("")
            }
            ("read", Method::Get) if !name.is_empty() => {
                let body = call(stub(&env, name)?.read()).await?;
                Response::ok(body.as_string().unwrap_or_default())
            }
            _ => Response::error("not found", 404),
        }
    }

    /// The stub of the floor object `name`, for RPC.
    fn stub(env: &Env, name: &str) -> Result<FloorStub> {
        Ok(env.durable_object("FLOOR")?.get_by_name(name)?.into_rpc())
    }

    /// Awaits an RPC call's promise (a failure to make the call as the call's error).
    async fn call(sent: std::result::Result<Promise, JsValue>) -> Result<JsValue> {
        Ok(JsFuture::from(sent?).await?)
    }
}
