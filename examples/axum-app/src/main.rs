//! `axum-app`: serves the service on `127.0.0.1:$PORT` (default 8787; `0` picks a free port),
//! its tasks kept in `$DURABLE_MCP_DATA` (default `./.durable-mcp`), its users in
//! `$AXUM_APP_TOKENS`. Stops gracefully on Ctrl-C or SIGTERM.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    // One line per request (tower-http) and the host's events.
    axum_app::log_to_stderr("info,tower_http=debug");
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
