//! `axum-app`: a durable-mcp endpoint inside an axum service of the application's own. The
//! service has its routes (`/`, `/health`), its middleware (request tracing with `tower-http`,
//! a bearer check of its own in front of `/mcp`) and its runtime; the MCP endpoint is one
//! route among them, and the tasks it starts run on the host's worker threads.
//!
//! `src/main.rs` runs it with [`run`]; the service is [`app`], and [`serve`] runs it for a
//! host, so that a test (or another binary) serves another
//! [`McpServer`] in the same service.

mod bearer;
mod tools;

use std::convert::Infallible;
use std::future::Future;

use axum::Router;
use axum::extract::Request;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use durable_mcp::McpServer;
use durable_mcp::native::{Endpoint, HostError, NativeHost};
use tower_http::trace::TraceLayer;
use tower_service::Service;

pub use bearer::{TOKENS_VAR, Tokens, TokensError};
pub use tools::server;

/// The service: the page at `/`, the health check at `/health`, and the MCP endpoint at
/// `/mcp` behind the bearer check; every request traced. `endpoint` is the host's
/// ([`NativeHost::mount`]), or a service around it.
pub fn app<S>(endpoint: S, tokens: Tokens) -> Router
where
    S: Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Response: IntoResponse,
    S::Future: Send,
{
    // The bearer check guards the endpoint alone: the page and the health check are public.
    let mcp = Router::new()
        .route_service("/mcp", endpoint)
        .route_layer(axum::middleware::from_fn_with_state(tokens, bearer::check));
    Router::new()
        .route("/", get(page))
        .route("/health", get(health))
        .merge(mcp)
        .layer(TraceLayer::new_for_http())
}

/// Mounts `host` in the service `app` builds around its endpoint, and serves it on
/// `listener` until `signal` completes; then shuts down gracefully: axum stops accepting and
/// finishes the requests in flight (the endpoint ends its listen streams first, so none holds
/// the shutdown up), and the host stops its workers, letting running activations settle.
/// Tasks in flight resume on the next start.
///
/// # Errors
///
/// The host's, when it cannot start or stops with an error; the listener's, when serving
/// fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    host: NativeHost,
    app: impl FnOnce(Endpoint) -> Router,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let endpoint = host.mount().await?;
    let app = app(endpoint.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(endpoint.graceful(signal))
        .await
        .map_err(ServeError::Serve)?;
    endpoint.shutdown().await?;
    Ok(())
}

/// Why [`serve`] stopped.
#[derive(Debug)]
pub enum ServeError {
    /// The MCP host could not start, or stopped with an error.
    Host(HostError),
    /// Serving on the listener failed.
    Serve(std::io::Error),
}

impl From<HostError> for ServeError {
    fn from(error: HostError) -> Self {
        ServeError::Host(error)
    }
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Host(error) => write!(f, "{error}"),
            ServeError::Serve(error) => write!(f, "serving failed: {error}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// Serves `server` in the service `app` builds, as `src/main.rs` does, until Ctrl-C or
/// SIGTERM: on `127.0.0.1:$PORT` (default 8787; `0` picks a free port), with the host's
/// settings from the environment ([`NativeHost::from_env`]: its state directory,
/// `DURABLE_MCP_DATA`, among them). It prints the endpoint's URL once it listens.
///
/// # Errors
///
/// A setting that is unusable, the port taken, or what [`serve`] stops with.
pub async fn run(
    server: fn() -> McpServer,
    app: impl FnOnce(Endpoint) -> Router,
) -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => (port.trim().parse())
            .map_err(|_| format!("PORT={port:?} is not a port number (0-65535)"))?,
        Err(_) => NativeHost::DEFAULT_PORT,
    };
    let host = NativeHost::new(server).from_env()?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "axum-app: serving MCP at http://{}/mcp",
        listener.local_addr()?
    );
    serve(listener, host, app, shutdown_signal()).await?;
    Ok(())
}

/// The application's own log, on stderr: its requests (tower-http at `debug`) and the host's
/// events, filtered by `RUST_LOG` (else `default`), in colour only on a terminal.
pub fn log_to_stderr(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    (tracing_subscriber::fmt().with_env_filter(filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// Completes on Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}

async fn health() -> impl IntoResponse {
    axum::Json(serde_json::json!({ "status": "ok" }))
}

async fn page() -> Html<&'static str> {
    Html(
        "<!doctype html><title>axum-app</title><h1>axum-app</h1>\
         <p>An axum service with an MCP endpoint at <code>/mcp</code> (send \
         <code>Authorization: Bearer &lt;your token&gt;</code>) and a health check at \
         <a href=\"/health\"><code>/health</code></a>.</p>",
    )
}
