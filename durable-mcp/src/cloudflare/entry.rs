//! The Worker's fetch handler: the router, with each task reached in its own Durable Object.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

#[cfg(feature = "inspector")]
use worker::Method;
use worker::js_sys::{Promise, Uint8Array};
use worker::wasm_bindgen::{self, JsValue, prelude::wasm_bindgen};
use worker::{ByteStream, Env, Request, Response, web_sys};

use super::client::{MAX_WATCHED_TASKS_PER_STREAM, ObjectTasks};
use super::driven::{self, settled};
#[cfg(feature = "oauth")]
use super::outbound::WorkerOutbound;
use super::settings::WorkerSettings;
#[cfg(feature = "inspector")]
use crate::apart::apart;
#[cfg(feature = "inspector")]
use crate::inspector::{self, INSPECTOR_PATH};
#[cfg(feature = "inspector")]
use crate::rpc::headers::same_secret;
use crate::rpc::listeners::{ListenLimits, Listeners};
use crate::rpc::{Headers, HttpRequest, HttpResponse, McpServer, Router};
use crate::settings::ALLOWED_HOSTS_VAR;
#[cfg(feature = "inspector")]
use crate::settings::INSPECTOR_TOKEN_VAR;

/// The binding name of the TaskRunner Durable Object namespace in wrangler.toml.
pub const TASK_RUNNER_BINDING: &str = "TASK_RUNNER";

/// The binding name of the TaskIndex Durable Object namespace in wrangler.toml: one object per
/// listing scope, which `tasks/list` reads. Without it, listing fails with an error naming the
/// binding, and tasks are created as before but not listed.
pub const TASK_INDEX_BINDING: &str = "TASK_INDEX";

/// The path of the MCP endpoint; every other path answers 404.
pub const MCP_PATH: &str = "/mcp";

/// Where an operator wakes a task: `POST /__durable-mcp/wake/<task id>` with
/// `Authorization: Bearer <token>` (the inspector's token,
/// [`INSPECTOR_TOKEN_VAR`](crate::settings::INSPECTOR_TOKEN_VAR)) runs the task's alarm
/// handler at once, as if its alarm had fired. Without that setting, or in a build without
/// the `inspector` feature, the path does not exist (404).
pub const WAKE_PATH: &str = "/__durable-mcp/wake/";

/// The largest request body the endpoint reads (the native host's limit too).
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// The binding names, in wrangler.toml, of one TaskRunner class and of the TaskIndex class that
/// lists its tasks. A Worker with one server uses [`Bindings::DEFAULT`] (`TASK_RUNNER` and
/// `TASK_INDEX`); a Worker that serves two servers binds a runner class and an index class for
/// each, and gives [`serve`] and [`task_runner!`](super::task_runner) the same value:
///
/// ```ignore
/// const BINDINGS_A: Bindings = Bindings::new("RUNNER_A", "INDEX_A");
/// ```
///
/// Each server needs an index of its own: a listing asks the runner binding of its server for
/// every task id its index holds, and forgets the ids that binding does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bindings {
    runner: &'static str,
    index: &'static str,
}

impl Bindings {
    /// [`TASK_RUNNER_BINDING`] and [`TASK_INDEX_BINDING`]: what [`serve`],
    /// [`ObjectTasks::from_env`] and [`TaskRunner::new`](super::TaskRunner::new) use.
    pub const DEFAULT: Bindings = Bindings::new(TASK_RUNNER_BINDING, TASK_INDEX_BINDING);

    /// The TaskRunner namespace bound as `runner`, its TaskIndex namespace as `index`.
    pub const fn new(runner: &'static str, index: &'static str) -> Self {
        Bindings { runner, index }
    }

    /// The binding name of the TaskRunner namespace.
    pub const fn runner(&self) -> &'static str {
        self.runner
    }

    /// The binding name of the TaskIndex namespace. Without that binding, tasks are created
    /// unlisted and `tasks/list` fails with an error naming it.
    pub const fn index(&self) -> &'static str {
        self.index
    }
}

impl Default for Bindings {
    fn default() -> Self {
        Bindings::DEFAULT
    }
}

/// One MCP endpoint of a Worker, for [`serve`]: the path it answers and the [`Bindings`]
/// of the objects its tasks live in. [`serve`] is [`Endpoint::DEFAULT`].
///
/// ```ignore
/// const A: Endpoint = Endpoint::new("/a/mcp", Bindings::new("RUNNER_A", "INDEX_A"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    path: &'static str,
    bindings: Bindings,
}

impl Endpoint {
    /// [`MCP_PATH`] with [`Bindings::DEFAULT`].
    pub const DEFAULT: Endpoint = Endpoint::new(MCP_PATH, Bindings::DEFAULT);

    /// The endpoint at `path` (such as `"/a/mcp"`), whose tasks live in the objects of
    /// `bindings`.
    pub const fn new(path: &'static str, bindings: Bindings) -> Self {
        Endpoint { path, bindings }
    }

    /// The path of the MCP endpoint.
    pub const fn path(&self) -> &'static str {
        self.path
    }

    /// The bindings of the endpoint's task objects.
    pub const fn bindings(&self) -> Bindings {
        self.bindings
    }

    /// The endpoint's wake path: [`WAKE_PATH`] beside the endpoint's path, so
    /// `/__durable-mcp/wake/` for `/mcp` and `/a/__durable-mcp/wake/` for `/a/mcp`.
    #[cfg(feature = "inspector")]
    pub fn wake_path(&self) -> String {
        format!("{}{WAKE_PATH}", self.parent_path())
    }

    /// The endpoint's task inspector: [`INSPECTOR_PATH`](crate::http::INSPECTOR_PATH) beside the
    /// endpoint's path, so `/__durable-mcp/inspector` for `/mcp` and
    /// `/a/__durable-mcp/inspector` for `/a/mcp`. It lists and acts on the tasks of the
    /// endpoint's bindings, and exists while the Worker has
    /// [`INSPECTOR_TOKEN_VAR`](crate::settings::INSPECTOR_TOKEN_VAR).
    #[cfg(feature = "inspector")]
    pub fn inspector_path(&self) -> String {
        format!("{}{INSPECTOR_PATH}", self.parent_path())
    }

    /// Whether `path` is one the endpoint answers besides its inspector: its own, its wake
    /// path, or MCP authorization's metadata.
    fn serves(&self, path: &str) -> bool {
        #[cfg(feature = "inspector")]
        if path.starts_with(self.wake_path().as_str()) {
            return true;
        }
        path == self.path || path.starts_with("/.well-known/")
    }

    #[cfg(feature = "inspector")]
    fn parent_path(&self) -> &'static str {
        self.path.rsplit_once('/').map_or("", |(parent, _)| parent)
    }
}

impl Default for Endpoint {
    fn default() -> Self {
        Endpoint::DEFAULT
    }
}

/// What a server is cached under in its isolate: its endpoint's path and runner binding, and
/// the type name of its factory.
type ServerKey = (&'static str, &'static str, &'static str);

thread_local! {
    /// The servers, each built once per isolate by the first request to its endpoint.
    static SERVERS: RefCell<HashMap<ServerKey, Rc<McpServer>>> = RefCell::new(HashMap::new());
}

/// Answers one request to the MCP endpoint `endpoint` ([`Endpoint::DEFAULT`]: [`MCP_PATH`],
/// with tasks in the Durable Objects bound as [`TASK_RUNNER_BINDING`] and
/// [`TASK_INDEX_BINDING`]): its path, with tasks in the objects of its bindings, its
/// [wake path](Endpoint::wake_path) and its [inspector](Endpoint::inspector_path); every other
/// path answers 404. `server` builds the server once per isolate; plain tools, resources and
/// discovery are answered here without touching an object. For a Worker whose `fetch` is an
/// `async` handler (one that routes other paths itself); [`respond`] answers at less cost.
///
/// ```ignore
/// use durable_mcp::cloudflare::{Endpoint, serve};
/// use worker::{Context, Env, Response, Result, event, web_sys};
///
/// #[event(fetch)]
/// async fn fetch(request: web_sys::Request, env: Env, _cx: Context) -> Result<Response> {
///     serve(request, &env, Endpoint::DEFAULT, server).await
/// }
/// ```
///
/// A Worker serving two servers routes each endpoint's requests to its own call:
///
/// ```ignore
/// const A: Endpoint = Endpoint::new("/a/mcp", Bindings::new("RUNNER_A", "INDEX_A"));
/// const B: Endpoint = Endpoint::new("/b/mcp", Bindings::new("RUNNER_B", "INDEX_B"));
///
/// #[event(fetch)]
/// async fn fetch(request: web_sys::Request, env: Env, _cx: Context) -> Result<Response> {
///     if request.url().contains("/a/") {
///         serve(request, &env, A, server_a).await
///     } else {
///         serve(request, &env, B, server_b).await
///     }
/// }
/// ```
///
/// The handler may take worker's [`Request`] instead, at a little more cost per request (see
/// [`IncomingRequest`]).
///
/// Each server is built once per isolate and kept under its endpoint's path, its runner
/// binding and the type name of `server`: two factories of one endpoint get a server each,
/// unless their type names are equal (two closures written in one function can share a name),
/// in which case the second request's factory is not called and it gets the first one's
/// server. Give such factories endpoints of their own.
pub async fn serve<R, F>(
    request: R,
    env: &Env,
    endpoint: Endpoint,
    server: F,
) -> worker::Result<Response>
where
    R: IncomingRequest,
    F: FnOnce() -> McpServer,
{
    #[cfg(feature = "logging")]
    super::logging::install(env);
    let request = request.into_platform_request();
    let url = request.url();
    let path = url_path(&url);
    #[cfg(feature = "inspector")]
    let inspector_path = path
        .strip_prefix(endpoint.inspector_path().as_str())
        .filter(|rest| rest.is_empty() || rest.starts_with('/'));
    #[cfg(not(feature = "inspector"))]
    let inspector_path: Option<&str> = None;
    if inspector_path.is_none() && !endpoint.serves(path) {
        return not_found(endpoint);
    }
    // Every path the endpoint serves answers 500 while a setting is unusable, rather than
    // serve on a setting it cannot honour.
    let settings = match WorkerSettings::of_isolate(env) {
        Ok(settings) => settings,
        Err(unusable) => {
            tracing::error!(target: crate::core::trace::TARGET, "{unusable}");
            let message = format!("this Worker's settings are unusable: {unusable}");
            return Response::error(message, 500);
        }
    };
    #[cfg(feature = "inspector")]
    let token = settings.inspector_token.as_deref();
    // The inspector and the wake path apart: an MCP request compiles none of their code
    // (see `apart`).
    #[cfg(feature = "inspector")]
    if let Some(inspector_path) = inspector_path {
        return apart(inspect(
            &request,
            env,
            endpoint,
            token,
            inspector_path,
            &url,
        ))
        .await;
    }
    let server = shared_server(endpoint, server, env, &settings);
    if path != endpoint.path {
        if let Some(metadata) = server.well_known(&request.method(), path) {
            return into_response(metadata);
        }
        #[cfg(feature = "inspector")]
        if let Some(task_id) = path.strip_prefix(endpoint.wake_path().as_str()) {
            let request = Request::from(request);
            return apart(wake(&request, env, endpoint, token, task_id)).await;
        }
        return not_found(endpoint);
    }
    let headers = request_headers(&request);
    let Some(body) = read_body(&request, &headers, BODY_LIMIT).await? else {
        return into_response(HttpResponse::too_large(BODY_LIMIT));
    };
    let http = HttpRequest {
        method: request.method(),
        headers,
        body,
    };
    let tasks = Rc::new(ObjectTasks::from_bindings(env, endpoint.bindings)?);
    let router = Router::with_tasks(server, tasks).with_listeners(isolate_listeners());
    let query = url
        .split_once('?')
        .map_or("", |(_, query)| query.split('#').next().unwrap_or(query));
    into_response(router.handle_with_query(http, query).await)
}

thread_local! {
    /// The isolate's listen streams: a list change made by one request reaches the streams
    /// the isolate holds for others. Each stream follows at most
    /// [`MAX_WATCHED_TASKS_PER_STREAM`] tasks, one socket to an object each.
    static LISTENERS: Listeners = Listeners::new(ListenLimits {
        max_task_ids: MAX_WATCHED_TASKS_PER_STREAM,
        ..ListenLimits::DEFAULT
    });
}

/// This isolate's hub of listen streams.
fn isolate_listeners() -> Listeners {
    LISTENERS.with(Listeners::clone)
}

/// Answers one request to the Worker as [`serve`] does, for a fetch handler that is a plain
/// function: the Worker's `fetch` export that [`fetch_handler!`](super::fetch_handler) writes.
/// The promise resolves to the response.
///
/// This is the cheaper way to answer: an `async` handler's future is polled by
/// wasm-bindgen-futures, which pays a round of closures and microtasks at every promise it
/// awaits, while this one is polled by a JavaScript loop that awaits the request's body and
/// its call to the task's object natively: less CPU and latency per poll (`cargo xtask
/// bench worker`).
pub fn respond<F>(request: web_sys::Request, env: Env, endpoint: Endpoint, server: F) -> Promise
where
    F: FnOnce() -> McpServer + 'static,
{
    driven::start(async move {
        let response = match serve(request, &env, endpoint, server).await {
            Ok(response) => response,
            // What worker's `#[event(fetch)]` answers for a handler's error.
            Err(error) => {
                tracing::error!(target: crate::core::trace::TARGET,"{error}");
                Response::error(error.to_string(), 500)?
            }
        };
        Ok(JsValue::from(web_sys::Response::from(response)))
    })
}

/// A request as a Worker's fetch handler receives it, which [`serve`] and [`serve`]
/// answer: the platform's own `web_sys::Request`, or worker's [`Request`].
///
/// Prefer the first, declaring the handler as `async fn fetch(request: web_sys::Request, ...)`
/// (`use worker::web_sys;`): building worker's `Request` reads the request's `cf` properties
/// from the platform, a cost on every request that the endpoint has no use for.
pub trait IncomingRequest: sealed::Sealed {
    /// The platform's request.
    fn into_platform_request(self) -> web_sys::Request;
}

impl IncomingRequest for web_sys::Request {
    fn into_platform_request(self) -> web_sys::Request {
        self
    }
}

impl IncomingRequest for Request {
    fn into_platform_request(self) -> web_sys::Request {
        // `Clone::clone` copies the reference; the inherent `clone` would tee the body.
        Clone::clone(self.inner())
    }
}

mod sealed {
    /// Only the platform's request type and worker's are [`super::IncomingRequest`]s.
    pub trait Sealed {}

    impl Sealed for worker::web_sys::Request {}
    impl Sealed for worker::Request {}
}

/// The path of an absolute URL as the platform writes it (`http://host:port/path?query`),
/// without reparsing it: the first `/` after the host begins the path, and a `?` or `#` in
/// the path itself would be percent-encoded.
fn url_path(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(url, |at| &url[at + 3..]);
    let path = after_scheme.find('/').map_or("/", |at| &after_scheme[at..]);
    path.split(['?', '#']).next().unwrap_or(path)
}

fn not_found(endpoint: Endpoint) -> worker::Result<Response> {
    Response::error(
        format!("not found: the MCP endpoint is {}", endpoint.path),
        404,
    )
}

#[wasm_bindgen(inline_js = r#"
export function header_lines(headers) {
  let lines = "";
  for (const [name, value] of headers) {
    lines += name + "\n" + value + "\n";
  }
  return lines;
}
"#)]
extern "C" {
    /// Each header's name and value, each followed by a line feed, which neither may contain:
    /// one call across the wasm boundary instead of several per header.
    fn header_lines(headers: &web_sys::Headers) -> String;
}

/// The request's headers, read in one call.
fn request_headers(request: &web_sys::Request) -> Headers {
    Headers::from_lines(&header_lines(&request.headers()))
}

/// The request's body, or `None` when it is longer than `limit`: refused on its
/// `Content-Length` before a byte is read, and otherwise read only up to the limit, so that
/// a huge body never fills the isolate's memory.
async fn read_body(
    request: &web_sys::Request,
    headers: &Headers,
    limit: usize,
) -> worker::Result<Option<Vec<u8>>> {
    let declared = headers.get("content-length");
    match declared.and_then(|length| length.trim().parse::<u64>().ok()) {
        Some(length) if length > limit as u64 => return Ok(None),
        // The runtime holds the body to its declared length: read it in one call, which
        // costs less than a stream's read per chunk.
        Some(_) => {
            let buffer = settled(request.array_buffer()?).await?;
            return Ok(Some(Uint8Array::new(&buffer).to_vec()));
        }
        None => {}
    }
    let Some(stream) = request.body() else {
        return Ok(Some(Vec::new()));
    };
    let mut chunks = ByteStream::from(stream);
    let mut body = Vec::new();
    while let Some(chunk) = futures_util::StreamExt::next(&mut chunks).await {
        let chunk = chunk?;
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// Runs the alarm handler of `task_id`'s object, for an operator holding the inspector's
/// token.
#[cfg(feature = "inspector")]
async fn wake(
    request: &Request,
    env: &Env,
    endpoint: Endpoint,
    token: Option<&str>,
    task_id: &str,
) -> worker::Result<Response> {
    let Some(token) = token else {
        return not_found(endpoint);
    };
    let presented = request.headers().get("authorization")?.unwrap_or_default();
    let expected = format!("Bearer {token}");
    if !same_secret(&presented, &expected) {
        let mut refused = Response::error(
            format!("wake needs Authorization: Bearer <{INSPECTOR_TOKEN_VAR}>"),
            401,
        )?;
        refused
            .headers_mut()
            .set("www-authenticate", "Bearer realm=\"durable-mcp wake\"")?;
        return Ok(refused);
    }
    if request.method() != Method::Post {
        return Response::error("wake is a POST", 405);
    }
    let tasks = ObjectTasks::from_bindings(env, endpoint.bindings)?;
    match tasks.wake(task_id).await {
        Ok(()) => Response::ok(format!("woke {task_id}")),
        Err(error) => Response::error(error.to_string(), 500),
    }
}

/// Answers a request to the task inspector: 404 unless the Worker has the inspector's token,
/// which the inspector's API then requires.
#[cfg(feature = "inspector")]
async fn inspect(
    request: &web_sys::Request,
    env: &Env,
    endpoint: Endpoint,
    token: Option<&str>,
    path: &str,
    url: &str,
) -> worker::Result<Response> {
    let Some(token) = token else {
        return not_found(endpoint);
    };
    let headers = request_headers(request);
    let Some(body) = read_body(request, &headers, BODY_LIMIT).await? else {
        return into_response(HttpResponse::too_large(BODY_LIMIT));
    };
    let query = url
        .split_once('?')
        .map_or("", |(_, query)| query.split('#').next().unwrap_or(query));
    let tasks = ObjectTasks::from_bindings(env, endpoint.bindings)?;
    let request = inspector::Request {
        method: &request.method(),
        path,
        query,
        headers: &headers,
        body: &body,
    };
    into_response(inspector::handle(&tasks, token, request).await)
}

fn shared_server<F: FnOnce() -> McpServer>(
    endpoint: Endpoint,
    server: F,
    env: &Env,
    settings: &WorkerSettings,
) -> Rc<McpServer> {
    let key = (
        endpoint.path,
        endpoint.bindings.runner,
        std::any::type_name::<F>(),
    );
    SERVERS.with(|servers| {
        let mut servers = servers.borrow_mut();
        let built = servers.entry(key).or_insert_with(|| {
            #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
            let mut server = settings.server.apply(allow_hosts_from(env, server()));
            #[cfg(feature = "oauth")]
            server.reach_authorization_servers(Rc::new(WorkerOutbound));
            Rc::new(server)
        });
        Rc::clone(built)
    })
}

/// The domain of every Worker's default hostname, `<worker>.<account>.workers.dev`.
const WORKERS_DEV: &str = "workers.dev";

/// Accepts hostnames under workers.dev, and adds the hosts named in the Worker variable
/// [`ALLOWED_HOSTS_VAR`] (separated by commas or spaces; `*` allows any) to the server's Host
/// and Origin policy.
fn allow_hosts_from(env: &Env, mut server: McpServer) -> McpServer {
    // A deployed Worker answers on its workers.dev name without settings. The Host check
    // stops DNS rebinding onto a local server; workers.dev names always resolve to
    // Cloudflare, so no page can rebind one onto `wrangler dev`.
    server = server.allow_hosts_under(WORKERS_DEV);
    let Ok(hosts) = env.var(ALLOWED_HOSTS_VAR) else {
        return server;
    };
    let hosts = hosts.to_string();
    for host in hosts.split([',', ' ']).filter(|host| !host.is_empty()) {
        server = if host == "*" {
            server.allow_any_host()
        } else {
            server.allow_host(host)
        };
    }
    server
}

fn into_response(response: HttpResponse) -> worker::Result<Response> {
    let reply = match response.events {
        // The stream is cancelled, and its work dropped, when the client goes away.
        Some(events) => {
            Response::from_stream(futures_util::StreamExt::map(events, Ok::<_, worker::Error>))?
        }
        None => Response::from_bytes(response.body)?,
    };
    let mut reply = reply.with_status(response.status);
    let headers = reply.headers_mut();
    for (name, value) in response.headers {
        headers.set(name, &value)?;
    }
    Ok(reply)
}
