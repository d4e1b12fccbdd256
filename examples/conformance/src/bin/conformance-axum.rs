//! The fixture server mounted in the `axum-app` example's service (its routes, its request
//! tracing, its bearer check in front of `/mcp`, on its tokio runtime), so that the black-box
//! suite and the official clients check a mounted endpoint as they check the host's own
//! listener. Its users and their tokens come from `AXUM_APP_TOKENS`, as the example's do; the
//! user named [`ANONYMOUS`] reaches the endpoint as an anonymous caller, for the tests of what
//! the endpoint does for callers nobody names (a 2025 session's own tasks).

#[cfg(not(target_arch = "wasm32"))]
use axum::extract::Request;
#[cfg(not(target_arch = "wasm32"))]
use durable_mcp::native::Authenticated;

/// The user whose requests reach the fixtures without a principal.
#[cfg(not(target_arch = "wasm32"))]
const ANONYMOUS: &str = "anonymous";

#[cfg(not(target_arch = "wasm32"))]
#[tokio::main]
async fn main() -> std::process::ExitCode {
    use tower_layer::Layer;

    axum_app::log_to_stderr("info");
    let served = match axum_app::Tokens::from_env() {
        Ok(tokens) => {
            let app = move |endpoint| {
                let endpoint = axum::middleware::map_request(unnamed).layer(endpoint);
                axum_app::app(endpoint, tokens)
            };
            axum_app::run(conformance_server::server, app).await
        }
        Err(error) => Err(error.into()),
    };
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance-axum: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A request of [`ANONYMOUS`], without its principal.
#[cfg(not(target_arch = "wasm32"))]
async fn unnamed(mut request: Request) -> Request {
    let anonymous = (request.extensions().get::<Authenticated>())
        .is_some_and(|caller| caller.principal() == ANONYMOUS);
    if anonymous {
        request.extensions_mut().remove::<Authenticated>();
    }
    request
}

#[cfg(target_arch = "wasm32")]
fn main() {}
