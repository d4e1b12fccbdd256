//! The decision ladder every request climbs, from the HTTP method to the method handler. Each
//! rung either refuses the request (with the JSON-RPC error and HTTP status the 2026-07-28
//! transport prescribes) or hands it to the next; nothing is written before the last rung.

use std::rc::Rc;

use serde_json::{Map, Value};

use super::dispatch::{Call, Method};
use super::error::RpcError;
use super::headers::{
    METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, check_origin, expect_header,
};
use super::http::{HttpRequest, HttpResponse};
use super::server::McpServer;
use super::service::TaskService;
use crate::Engine;
use crate::wire::envelope::{META_SERVER_INFO, RequestMeta};
use crate::wire::jsonrpc::{failure, success};
use crate::wire::{RequestId, SUPPORTED_VERSIONS, code};

/// The MCP endpoint of one host: a [`McpServer`] over the service that runs its tasks.
pub struct Router {
    server: Rc<McpServer>,
    tasks: Rc<dyn TaskService>,
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
    /// from [`McpServer::task_registry`]).
    pub fn new(server: McpServer, engine: Rc<Engine>) -> Self {
        Router::with_tasks(server, engine)
    }

    /// The endpoint serving `server`, with task creation and the `tasks/*` methods sent to
    /// `tasks` (the Cloudflare host sends them to each task's Durable Object).
    /// The server may be shared between routers (a Worker builds one router per request).
    pub fn with_tasks(server: impl Into<Rc<McpServer>>, tasks: Rc<dyn TaskService>) -> Self {
        Router {
            server: server.into(),
            tasks,
        }
    }

    /// The server this endpoint serves.
    pub fn server(&self) -> &McpServer {
        &self.server
    }

    /// Answers one HTTP request to the endpoint.
    pub async fn handle(&self, request: HttpRequest) -> HttpResponse {
        if request.method != "POST" {
            let mut response = HttpResponse::empty(405);
            response.headers.push(("allow", "POST".to_owned()));
            return response;
        }
        if let Err(error) = check_origin(&request.headers, &self.server.origins) {
            return respond(None, Err(error));
        }
        let message = match parse_message(&request.body) {
            Ok(Some(message)) => message,
            // A notification or a response from the client: nothing to answer.
            Ok(None) => return HttpResponse::empty(202),
            Err((id, error)) => return respond(id.as_ref(), Err(error)),
        };
        let outcome = self.call(&request, &message).await;
        if let Err(error) = &outcome
            && error.error.code == code::INTERNAL_ERROR
            && let Some(hook) = &self.server.on_error
        {
            hook(&message.method, &error.error);
        }
        let outcome = outcome.map(|result| with_server_info(result, &self.server));
        respond(Some(&message.id), outcome)
    }

    async fn call(&self, request: &HttpRequest, message: &Message) -> Result<Value, RpcError> {
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
        let principal = match &self.server.authenticate {
            Some(authenticate) => authenticate(headers).map_err(RpcError::unauthorized)?,
            None => None,
        };
        Call {
            server: &self.server,
            tasks: &*self.tasks,
            params: &message.params,
            meta: &meta,
            principal,
            headers,
        }
        .dispatch(method)
        .await
    }
}

/// A request as the ladder reads it.
struct Message {
    id: RequestId,
    method: String,
    params: Map<String, Value>,
}

/// Reads a JSON-RPC request: `Ok(None)` for a notification or response (no answer due).
fn parse_message(body: &[u8]) -> Result<Option<Message>, (Option<RequestId>, RpcError)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| (None, RpcError::parse(e)))?;
    let Value::Object(mut object) = value else {
        let what = if value.is_array() {
            "batches are not supported in MCP 2026-07-28; send one request per POST"
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
        // A response to nothing this server asked, or a malformed request.
        return match id {
            Some(id) if !object.contains_key("result") && !object.contains_key("error") => {
                Err((Some(id), invalid("the request has no \"method\"")))
            }
            _ => Ok(None),
        };
    };
    let Value::String(method) = method.clone() else {
        return Err((id, invalid("\"method\" must be a string")));
    };
    let Some(id) = id else { return Ok(None) };
    let params = match object.remove("params") {
        None => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Err((Some(id), RpcError::envelope("params must be an object"))),
    };
    Ok(Some(Message { id, method, params }))
}

fn invalid(reason: &str) -> RpcError {
    RpcError::invalid_request(format!("Invalid request: {reason}"))
}

/// The request's `_meta` envelope.
fn envelope(params: &Map<String, Value>) -> Result<RequestMeta, RpcError> {
    let meta = params
        .get("_meta")
        .ok_or_else(|| RpcError::envelope("params._meta is missing"))?;
    serde_json::from_value(meta.clone()).map_err(RpcError::envelope)
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

fn respond(id: Option<&RequestId>, outcome: Result<Value, RpcError>) -> HttpResponse {
    match outcome {
        Ok(result) => match id {
            Some(id) => HttpResponse::json(200, &success(id, result)),
            None => HttpResponse::empty(202),
        },
        Err(error) => HttpResponse::json(error.status, &failure(id, &error.error)),
    }
}
