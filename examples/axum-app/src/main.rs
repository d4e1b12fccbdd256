//! `axum-app`: serves the service on `127.0.0.1:$PORT` (default 8787; `0` picks a free port),
//! its tasks kept in `$DURABLE_MCP_DATA` (default `./.durable-mcp`), its users in
//! `$AXUM_APP_TOKENS`. Stops gracefully on Ctrl-C or SIGTERM.

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    // The application's own log, on stderr: its requests (tower-http) and the host's events.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,tower_http=debug"));
    (tracing_subscriber::fmt().with_env_filter(filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let served = match axum_app::Tokens::from_env() {
        Ok(tokens) => {
            let app = move |endpoint| axum_app::app(endpoint, tokens);
            axum_app::run(axum_app::server, app).await
        }
        Err(error) => Err(error.into()),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("axum-app: {error}");
            ExitCode::FAILURE
        }
    }
}
