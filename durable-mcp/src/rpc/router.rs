//! The decision ladder every request climbs, from the HTTP method to the method handler. Each
//! rung either refuses the request (with the JSON-RPC error and HTTP status the 2026-07-28
//! transport prescribes) or hands it to the next; nothing is written before the last rung.

use crate::apart::apart;
use std::rc::Rc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use futures_util::StreamExt;
use futures_util::stream::{self, LocalBoxStream};

use super::cors::CorsPolicy;
use super::dispatch::{
    Call, Method, Reply, check_task_scopes, principal_list_scope, requested_log_level,
};
use super::error::RpcError;
use super::follow::{Emit, answer_id};
use super::headers::{
    METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, check_origin, expect_header,
};
use super::http::{Headers, HttpRequest, HttpResponse};
#[cfg(feature = "mcp-2025")]
use super::legacy::{LegacyCall, LegacyReply};
use super::listeners::Listeners;
use super::relay::{self, CALL_REQUEST_PREFIX};
use super::server::McpServer;
#[cfg(feature = "mcp-2025")]
use super::session::SESSION_HEADER;
use super::sse::{self, EventStream};
#[cfg(feature = "oauth")]
use crate::auth::{OAuth, Refusal, bearer_token};
use crate::runtime::Engine;
use crate::runtime::TaskRoute;
use crate::runtime::new_task_id;
use crate::runtime::route::OwnTasks;
use crate::wire::envelope::{META_PROTOCOL_VERSION, META_SERVER_INFO, RequestMeta};
use crate::wire::jsonrpc::{failure, success, success_text};
#[cfg(feature = "mcp-2025")]
use crate::wire::legacy::strip_modern_fields;
use crate::wire::{LEGACY_VERSIONS, RequestId, SUPPORTED_VERSIONS, code};

/// The MCP endpoint of one host: a [`McpServer`] over the route to its tasks.
pub struct Router {
    server: Rc<McpServer>,
    tasks: Rc<dyn TaskRoute>,
    /// The host's open listen streams (this router's own unless the host shares its hub).
    listeners: Listeners,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Router {
    /// The endpoint serving `server`, with its tasks run by `engine` in this process (built
    /// from [`McpServer::task_registry`]). The engine reaches the tasks it starts as children
    /// through itself.
    pub fn new(server: impl Into<Rc<McpServer>>, engine: Rc<Engine>) -> Self {
        engine.reach_own_tasks();
        Router::with_tasks(server, Rc::new(OwnTasks::keeping(engine)))
    }

    /// The endpoint serving `server`, with task creation and the `tasks/*` methods sent
    /// through `tasks` (the Cloudflare host's [`TaskRoute`] sends them to each task's Durable
    /// Object).
    /// The server may be shared between routers (a Worker builds one router per request).
    pub fn with_tasks(server: impl Into<Rc<McpServer>>, tasks: Rc<dyn TaskRoute>) -> Self {
        Router {
            server: server.into(),
            tasks,
            listeners: Listeners::default(),
        }
    }

    /// The same router, whose listen streams are those of `listeners`: a host with several
    /// routers (one per thread, one per request) shares one hub between them, so that a list
    /// change made through one reaches the streams of all.
    #[cfg_attr(not(any_host), allow(dead_code))]
    pub(crate) fn with_listeners(mut self, listeners: Listeners) -> Self {
        self.listeners = listeners;
        self
    }

    /// The answer to a request for `path` outside the endpoint that MCP authorization
    /// defines: the Protected Resource Metadata (RFC 9728) at
    /// `/.well-known/oauth-protected-resource` and the same followed by the endpoint's path,
    /// when the server checks tokens ([`McpServer::oauth`]). `None` for every other path.
    pub fn well_known(&self, method: &str, path: &str) -> Option<HttpResponse> {
        self.server.well_known(method, path)
    }

    /// The server this endpoint serves.
    pub fn server(&self) -> &McpServer {
        &self.server
    }

    /// Answers one HTTP request to the endpoint.
    pub async fn handle(&self, request: HttpRequest) -> HttpResponse {
        self.handle_with_query(request, "").await
    }

    /// Answers one HTTP request to the endpoint whose URL carried the query string `query`
    /// (without the `?`): hosts pass it so that an access token sent there is refused.
    pub async fn handle_with_query(&self, request: HttpRequest, query: &str) -> HttpResponse {
        self.handle_as(request, query, None).await
    }

    /// Answers one HTTP request whose sender the host's application has already
    /// authenticated as `principal` (a mounted endpoint's request extension): it takes the
    /// place of the server's `authenticate` hook, while a server that checks tokens still
    /// checks them and binds tasks to the token's principal.
    #[cfg_attr(not(native_host), allow(dead_code))]
    pub(crate) async fn handle_as(
        &self,
        request: HttpRequest,
        query: &str,
        principal: Option<String>,
    ) -> HttpResponse {
        let cors = &self.server.cors;
        if request.method == "OPTIONS"
            && let Some(preflight) = cors.preflight(&request.headers)
        {
            return preflight;
        }
        let origin = cors.allowed_origin(&request.headers);
        let cross_origin = origin.is_some();
        let mut response = self.answer(request, query, principal, cross_origin).await;
        CorsPolicy::expose(origin, &mut response);
        response
    }

    /// The answer to `request`; `cross_origin` when its `Origin` is one the server lets web
    /// pages call from.
    async fn answer(
        &self,
        request: HttpRequest,
        query: &str,
        principal: Option<String>,
        cross_origin: bool,
    ) -> HttpResponse {
        if request.method != "POST" {
            let mut response = HttpResponse::empty(405);
            response.headers.push(("allow", "POST".to_owned()));
            return response;
        }
        if let Err(error) = check_origin(&request.headers, &self.server.origins, cross_origin) {
            return respond(None, Err(error));
        }
        let parsed = parse_message(&request.body);
        // The arms apart, and OAuth's checks: a request compiles only the code it runs (see
        // `apart`).
        let caller = match self
            .caller(&request.headers, query, principal, &parsed)
            .await
        {
            Ok(caller) => caller,
            Err(error) => return respond(parsed.ok().as_ref().and_then(Parsed::id), Err(error)),
        };
        let message = match parsed {
            Ok(Parsed::Request(message)) => message,
            Ok(Parsed::Response(id, answer)) => {
                return apart(self.deliver(&id, answer, caller)).await;
            }
            // A notification: nothing to answer.
            Ok(Parsed::Notification) => return HttpResponse::empty(202),
            Err((id, error)) => return respond(id.as_ref(), Err(error)),
        };
        let legacy = is_legacy(&request.headers, &message);
        if message.params_malformed {
            // A 2025 client reads its errors only from a 200, and knows no envelope.
            let error = if legacy {
                RpcError::invalid_params("Invalid params: params must be an object")
            } else {
                RpcError::envelope("params must be an object")
            };
            return respond(Some(&message.id), Err(error));
        }
        if legacy {
            #[cfg(feature = "mcp-2025")]
            return apart(self.handle_legacy(&request, &message, caller)).await;
            #[cfg(not(feature = "mcp-2025"))]
            return respond(
                Some(&message.id),
                Err(legacy_unserved(&request.headers, &message)),
            );
        }
        let outcome = apart(self.call(&request, &message, caller)).await;
        self.report(&message, &outcome);
        let server = Rc::clone(&self.server);
        frame(&message.id, outcome, move |result| {
            with_server_info(result, &server)
        })
    }

    async fn call(
        &self,
        request: &HttpRequest,
        message: &Message,
        caller: Caller,
    ) -> Result<Reply, RpcError> {
        let method = Method::parse(&message.method)
            .ok_or_else(|| RpcError::method_not_found(&message.method))?;
        let meta = envelope(&message.params)?;
        let headers = &request.headers;
        // A header that contradicts the body is a transport fault (-32020) whatever the
        // version; only a version both agree on can be unsupported (-32022).
        expect_header(headers, PROTOCOL_VERSION_HEADER, &meta.protocol_version)?;
        if !SUPPORTED_VERSIONS.contains(&meta.protocol_version.as_str()) {
            return Err(RpcError::unsupported_version(&meta.protocol_version));
        }
        expect_header(headers, METHOD_HEADER, &message.method)?;
        if let Some(name) = method.routed_name(&message.params)? {
            expect_header(headers, NAME_HEADER, name)?;
        }
        let call = Call {
            server: &self.server,
            tasks: &self.tasks,
            list_scope: caller.principal.as_deref().map(principal_list_scope),
            log_level: requested_log_level(&message.params),
            asks_client: false,
            params: &message.params,
            meta: &meta,
            principal: caller.principal,
            granted: caller.scopes,
            headers,
            listeners: &self.listeners,
        };
        if method == Method::SubscriptionsListen {
            return apart(call.listen(&message.id)).await;
        }
        call.dispatch(method).await
    }

    /// A request of the 2025 era: see [`legacy`](super::legacy).
    #[cfg(feature = "mcp-2025")]
    async fn handle_legacy(
        &self,
        request: &HttpRequest,
        message: &Message,
        caller: Caller,
    ) -> HttpResponse {
        let call = LegacyCall {
            server: &self.server,
            tasks: &self.tasks,
            headers: &request.headers,
            method: &message.method,
            params: &message.params,
            principal: caller.principal,
            granted: caller.scopes,
            listeners: &self.listeners,
        };
        match call.answer().await {
            Ok(LegacyReply::Initialized(result, session)) => {
                let mut response = respond(Some(&message.id), Ok(result));
                response.headers.push((SESSION_HEADER, session));
                response
            }
            Ok(LegacyReply::Reply(reply)) => frame(&message.id, Ok(reply), strip_modern_fields),
            Err(error) => {
                let outcome = Err(error);
                self.report(message, &outcome);
                frame(&message.id, outcome, strip_modern_fields)
            }
        }
    }

    /// A client's response to a request a followed task sent it (an answer to its
    /// elicitation): recorded as a `tasks/update` of that task would record it.
    async fn deliver(
        &self,
        id: &RequestId,
        answer: Result<Value, Value>,
        caller: Caller,
    ) -> HttpResponse {
        let RequestId::String(id) = id else {
            return HttpResponse::empty(202);
        };
        if id.starts_with(CALL_REQUEST_PREFIX) {
            // A plain tool's call awaits it in this process, or nowhere any more.
            let answer = answer.unwrap_or_else(|error| json!({ "error": error }));
            relay::deliver(id, answer);
            return HttpResponse::empty(202);
        }
        let Some((task_id, key)) = answer_id(id) else {
            // A response to nothing this server asked.
            return HttpResponse::empty(202);
        };
        let principal = caller.principal.as_deref();
        let granted = caller.scopes.as_deref();
        if let Err(error) = check_task_scopes(
            &self.server,
            self.tasks.as_ref(),
            task_id,
            principal,
            granted,
        )
        .await
        {
            return respond(None, Err(error));
        }
        // A client that failed to answer (an error instead of a result) declines nothing and
        // accepts nothing: the request is cancelled, as a dismissed form would be.
        let response = answer.unwrap_or_else(|_| json!({ "action": "cancel" }));
        let responses = json!({ key: response });
        match self.tasks.update(task_id, &responses, principal).await {
            Ok(()) => HttpResponse::empty(202),
            Err(error) => respond(None, Err(error.into())),
        }
    }

    /// Who sent the request: the principal of its access token when the server checks
    /// tokens (refused with a challenge otherwise), or the one the host's application
    /// authenticated (`asserted`), or that of the server's `authenticate` hook, or nobody in
    /// particular.
    async fn caller(
        &self,
        headers: &Headers,
        query: &str,
        asserted: Option<String>,
        parsed: &Result<Parsed, (Option<RequestId>, RpcError)>,
    ) -> Result<Caller, RpcError> {
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.server.oauth {
            return apart(self.authorized(oauth, headers, query, parsed)).await;
        }
        #[cfg(not(feature = "oauth"))]
        let _ = (query, parsed); // What only a token check reads.
        let principal = match (asserted, &self.server.authenticate) {
            (Some(asserted), _) => Some(asserted),
            (None, Some(authenticate)) => authenticate(headers).map_err(RpcError::unauthorized)?,
            (None, None) => None,
        };
        Ok(Caller {
            principal,
            scopes: None,
        })
    }

    /// The caller of a server that checks tokens: the principal of the request's access
    /// token, or the challenge that refuses it.
    #[cfg(feature = "oauth")]
    async fn authorized(
        &self,
        oauth: &OAuth,
        headers: &Headers,
        query: &str,
        parsed: &Result<Parsed, (Option<RequestId>, RpcError)>,
    ) -> Result<Caller, RpcError> {
        // The 401 names what the request will need, so that one authorization gets it all.
        let tool = match parsed {
            Ok(Parsed::Request(message)) if message.method == "tools/call" => {
                message.params.get("name").and_then(Value::as_str)
            }
            _ => None,
        };
        let needed = self.server.needed_scopes(tool);
        let refuse = |refusal: Refusal| refusal.answer(oauth, &needed);
        let token = bearer_token(headers, query).map_err(refuse)?;
        let token = token.ok_or(Refusal::NoToken).map_err(refuse)?;
        let principal = oauth
            .validate(&token)
            .await
            .map_err(|refusal| refuse(Refusal::Token(refusal)))?;
        if !principal.grants(oauth.required_scopes()) {
            return Err(
                Refusal::InsufficientScope(oauth.required_scopes().to_vec()).answer(oauth, &[])
            );
        }
        Ok(Caller {
            principal: Some(principal.binding()),
            scopes: Some(principal.scopes),
        })
    }

    /// Tells the error hook of an internal error answered at once.
    fn report(&self, message: &Message, outcome: &Result<Reply, RpcError>) {
        if let Err(error) = outcome
            && error.error.code == code::INTERNAL_ERROR
            && let Some(hook) = &self.server.on_error
        {
            hook(&message.method, &error.error);
        }
    }
}

/// Whether a request belongs to the 2025 era: it carries no 2026-07-28 envelope, is not
/// `server/discover`, and its `MCP-Protocol-Version` header, if any, names a 2025 revision
/// (a request without the header after a 2025 `initialize` is 2025's). Anything else goes
/// down the 2026-07-28 ladder, which refuses what it cannot read exactly as before.
fn is_legacy(headers: &Headers, message: &Message) -> bool {
    let has_envelope = message
        .params
        .get("_meta")
        .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
        .is_some();
    let header_is_legacy = headers
        .get(PROTOCOL_VERSION_HEADER)
        .is_none_or(|version| LEGACY_VERSIONS.contains(&version.trim()));
    !has_envelope && message.method != "server/discover" && header_is_legacy
}

/// The refusal of a 2025 request by a server built without the 2025 lane (the `mcp-2025`
/// feature): 2025's "Unsupported protocol version" error, with HTTP 200 as 2025 clients read
/// errors, naming what the server speaks.
#[cfg(not(feature = "mcp-2025"))]
fn legacy_unserved(headers: &Headers, message: &Message) -> RpcError {
    let requested = match message
        .params
        .get("protocolVersion")
        .and_then(Value::as_str)
    {
        Some(version) => version.to_owned(),
        None => headers
            .get(PROTOCOL_VERSION_HEADER)
            .unwrap_or_else(|| LEGACY_VERSIONS[0].to_owned()),
    };
    let mut error = RpcError::unsupported_version(&requested);
    error.status = 200;
    error.error.code = code::INVALID_PARAMS;
    error.error.message = format!(
        "Unsupported protocol version: this server speaks only MCP {} (it was built without \
         durable-mcp's mcp-2025 feature, which serves the 2025 revisions)",
        SUPPORTED_VERSIONS.join(", ")
    );
    error
}

/// Who sent a request, as the server's authorization decided.
pub(crate) struct Caller {
    /// What the tasks it creates are bound to; `None` for an anonymous caller.
    pub(crate) principal: Option<String>,
    /// The scopes its access token grants; `None` when the server checks no tokens.
    pub(crate) scopes: Option<Vec<String>>,
}

/// A request as the ladder reads it.
struct Message {
    id: RequestId,
    method: String,
    params: Map<String, Value>,
    /// `params` was present but not an object (refused once the request's era is known).
    params_malformed: bool,
}

/// What a POST carried.
enum Parsed {
    /// A request, to answer.
    Request(Message),
    /// A response to a request of the server: its id and its result, or its error.
    Response(RequestId, Result<Value, Value>),
    /// A notification (or a response without an id): nothing to answer.
    Notification,
}

impl Parsed {
    /// The id to answer with.
    fn id(&self) -> Option<&RequestId> {
        match self {
            Parsed::Request(message) => Some(&message.id),
            Parsed::Response(..) | Parsed::Notification => None,
        }
    }
}

/// Reads a JSON-RPC message.
fn parse_message(body: &[u8]) -> Result<Parsed, (Option<RequestId>, RpcError)> {
    // from_str, as everywhere in the Worker: one JSON reader instead of two. A body that is
    // not UTF-8 is a parse error either way.
    let text = std::str::from_utf8(body).map_err(|e| (None, RpcError::parse(e)))?;
    let value: Value = serde_json::from_str(text).map_err(|e| (None, RpcError::parse(e)))?;
    let Value::Object(mut object) = value else {
        let what = if value.is_array() {
            "batches are not supported; send one request per POST"
        } else {
            "the body must be a JSON-RPC request object"
        };
        return Err((None, RpcError::invalid_request(what)));
    };
    let id = match object.remove("id") {
        None => None,
        Some(id) => Some(
            serde_json::from_value::<RequestId>(id)
                .map_err(|_| (None, invalid("the id must be a string or an integer")))?,
        ),
    };
    if object.get("jsonrpc") != Some(&Value::from("2.0")) {
        return Err((id, invalid("\"jsonrpc\" must be \"2.0\"")));
    }
    let Some(method) = object.get("method") else {
        return match (id, object.remove("result"), object.remove("error")) {
            (Some(id), Some(result), None) => Ok(Parsed::Response(id, Ok(result))),
            (Some(id), None, Some(error)) => Ok(Parsed::Response(id, Err(error))),
            (Some(id), None, None) => Err((Some(id), invalid("the request has no \"method\""))),
            _ => Ok(Parsed::Notification),
        };
    };
    let Value::String(method) = method.clone() else {
        return Err((id, invalid("\"method\" must be a string")));
    };
    let Some(id) = id else {
        return Ok(Parsed::Notification);
    };
    let (params, params_malformed) = match object.remove("params") {
        None => (Map::new(), false),
        Some(Value::Object(params)) => (params, false),
        Some(_) => (Map::new(), true),
    };
    Ok(Parsed::Request(Message {
        id,
        method,
        params,
        params_malformed,
    }))
}

fn invalid(reason: &str) -> RpcError {
    RpcError::invalid_request(format!("Invalid request: {reason}"))
}

/// The request's `_meta` envelope.
fn envelope(params: &Map<String, Value>) -> Result<RequestMeta, RpcError> {
    let meta = params
        .get("_meta")
        .ok_or_else(|| RpcError::envelope("params._meta is missing"))?;
    RequestMeta::deserialize(meta).map_err(RpcError::envelope)
}

fn with_server_info(mut result: Value, server: &McpServer) -> Value {
    if let Value::Object(object) = &mut result {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(
                META_SERVER_INFO.to_owned(),
                serde_json::to_value(&server.info).unwrap_or_default(),
            );
        }
    }
    result
}

/// The HTTP answer to request `id`: JSON, or a stream of events ending with the response.
/// `finish` completes a result (the 2026 lane adds the server's identity).
fn frame(
    id: &RequestId,
    outcome: Result<Reply, RpcError>,
    finish: impl Fn(Value) -> Value + 'static,
) -> HttpResponse {
    match outcome {
        Ok(Reply::Stream(emits)) => HttpResponse::events(events(id.clone(), emits, finish)),
        Ok(Reply::Value(result)) => respond(Some(id), Ok(finish(result))),
        Err(error) => respond(Some(id), Err(error)),
    }
}

/// The SSE frames of a stream of emissions: a priming event, each message, keep-alive
/// comments, and the response last.
fn events(
    id: RequestId,
    emits: LocalBoxStream<'static, Emit>,
    finish: impl Fn(Value) -> Value + 'static,
) -> EventStream {
    // Event ids let a client tell events apart; this server does not replay streams.
    let stream_id = new_task_id().unwrap_or_default();
    let event_id = move |n: usize| format!("{stream_id}-{n}");
    let priming = stream::once(std::future::ready(sse::priming(&event_id(0))));
    let frames = emits.enumerate().map(move |(n, emit)| match emit {
        Emit::Message(message) => sse::message(&event_id(n + 1), &message),
        Emit::KeepAlive => sse::keep_alive(),
        Emit::Done(outcome) => {
            let message = match outcome {
                Ok(result) => success(&id, finish(result)),
                Err(error) => failure(Some(&id), &error.error),
            };
            sse::message(&event_id(n + 1), &message)
        }
    });
    EventStream::new(priming.chain(frames))
}

fn respond(id: Option<&RequestId>, outcome: Result<Value, RpcError>) -> HttpResponse {
    match outcome {
        Ok(result) => match id {
            Some(id) => HttpResponse::json_text(200, success_text(id, &result)),
            None => HttpResponse::empty(202),
        },
        Err(error) => {
            let mut response = HttpResponse::json(error.status, &failure(id, &error.error));
            if let Some(seconds) = error.retry_after() {
                response.headers.push(("retry-after", seconds.to_string()));
            }
            if let Some(challenge) = error.challenge {
                response.headers.push(("www-authenticate", challenge));
            }
            response
        }
    }
}

#[cfg(all(test, feature = "testing", not(feature = "mcp-2025")))]
mod without_the_2025_lane {
    use futures_util::FutureExt;
    use serde_json::json;

    use super::*;
    use crate::runtime::TaskRegistry;
    use crate::testing::Harness;

    fn answer(headers: &[(&str, &str)], body: Value) -> HttpResponse {
        let harness = Harness::new(TaskRegistry::new());
        let router = Router::new(McpServer::new("lean", "1.0.0"), harness.shared_engine());
        let request = HttpRequest {
            method: "POST".to_owned(),
            headers: Headers::new(headers.iter().copied()),
            body: serde_json::to_vec(&body).unwrap(),
        };
        router
            .handle(request)
            .now_or_never()
            .expect("a refusal awaits nothing")
    }

    #[test]
    fn an_initialize_is_told_the_revision_the_server_speaks() {
        let response = answer(
            &[("content-type", "application/json")],
            json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": { "name": "old", "version": "1" } },
            }),
        );
        // 2025 clients read errors only from a 200.
        assert_eq!(response.status, 200);
        let body = response.json_body();
        assert_eq!(body["id"], 1);
        assert_eq!(body["error"]["code"], code::INVALID_PARAMS);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("Unsupported protocol version"),
            "{message}"
        );
        assert!(message.contains("mcp-2025 feature"), "{message}");
        assert_eq!(
            body["error"]["data"],
            json!({ "supported": SUPPORTED_VERSIONS, "requested": "2025-06-18" })
        );
    }

    #[test]
    fn a_later_2025_request_names_its_header_s_revision() {
        let response = answer(
            &[
                ("content-type", "application/json"),
                (PROTOCOL_VERSION_HEADER, "2025-11-25"),
            ],
            json!({ "jsonrpc": "2.0", "id": "t", "method": "tools/list" }),
        );
        assert_eq!(response.status, 200);
        let body = response.json_body();
        assert_eq!(body["error"]["code"], code::INVALID_PARAMS);
        assert_eq!(body["error"]["data"]["requested"], "2025-11-25");
    }
}
