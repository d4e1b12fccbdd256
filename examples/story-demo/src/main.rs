//! `story-demo` on the native host, under a small supervisor.
//!
//! The process started by hand supervises: it runs the host as a child process (this same
//! program, with [`CHILD_VAR`] set) and starts it again whenever the host exits with
//! [`RESTART_EXIT_CODE`], which the page's restart button makes it do mid-story. Any other
//! exit ends the supervisor with the same status. The child exits when the supervisor goes
//! (its standard input, a pipe from the supervisor, closes), so no host outlives it.
//!
//! Built for wasm32, the library's Worker entry is the program and this binary is empty.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    native::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::io::Read;
    use std::net::{Ipv4Addr, TcpListener};
    use std::process::{Command, ExitCode, Stdio};
    use std::time::Duration;

    use durable_mcp::http::{Headers, HttpResponse};
    use durable_mcp::native::NativeHost;
    use story_demo::pages::{self, Host, RESTART_PATH};

    /// Set in the child's environment: run the host, not the supervisor.
    const CHILD_VAR: &str = "STORY_DEMO_HOST";

    /// The host's exit status that asks the supervisor for a restart.
    const RESTART_EXIT_CODE: i32 = 75;

    /// How long the host lets the restart answer reach the page before it exits.
    const RESTART_GRACE: Duration = Duration::from_millis(150);

    pub fn main() -> ExitCode {
        if std::env::var_os(CHILD_VAR).is_some() {
            host()
        } else {
            supervise()
        }
    }

    fn supervise() -> ExitCode {
        let port = match fixed_port() {
            Ok(port) => port,
            Err(message) => {
                eprintln!("story-demo: {message}");
                return ExitCode::FAILURE;
            }
        };
        println!("story-demo: the page is at http://127.0.0.1:{port}/");
        // Found once: a rebuild while the demo runs replaces the file, and the link the
        // system keeps to the running program would then name a deleted one.
        let program = match std::env::current_exe() {
            Ok(program) => program,
            Err(error) => {
                eprintln!("story-demo: cannot find this program to run the host: {error}");
                return ExitCode::FAILURE;
            }
        };
        loop {
            // The pipe stays open while `child` lives here; the host watches it.
            let child = Command::new(&program)
                .env(CHILD_VAR, "1")
                .env("PORT", port.to_string())
                .stdin(Stdio::piped())
                .spawn();
            // `wait` would close the child's stdin first, which tells the host to exit.
            let waited = child.and_then(|mut child| {
                let _supervisor = child.stdin.take();
                child.wait()
            });
            let status = match waited {
                Ok(status) => status,
                Err(error) => {
                    eprintln!("story-demo: cannot run the host: {error}");
                    return ExitCode::FAILURE;
                }
            };
            if status.code() != Some(RESTART_EXIT_CODE) {
                let code = status.code().map_or(1, |code| code.clamp(0, 255));
                return ExitCode::from(u8::try_from(code).unwrap_or(1));
            }
            println!("story-demo: the host was killed on request; starting it again");
        }
    }

    /// `PORT` (default 8787); `0` is resolved to a free port now, so that a restarted host
    /// listens where the page already points.
    fn fixed_port() -> Result<u16, String> {
        let port = match std::env::var("PORT") {
            Ok(port) => port
                .trim()
                .parse::<u16>()
                .map_err(|_| format!("PORT={port:?} is not a port number (0-65535)"))?,
            Err(_) => 8787,
        };
        if port != 0 {
            return Ok(port);
        }
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .map_err(|error| format!("cannot find a free port: {error}"))
    }

    fn host() -> ExitCode {
        watch_supervisor();
        let host = NativeHost::new(story_demo::server)
            .from_env()
            .map(|host| host.pages(answer_page));
        match host.and_then(NativeHost::run) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("story-demo: {error}");
                ExitCode::FAILURE
            }
        }
    }

    /// The page, plus the restart button: answer, then exit at once, cutting short whatever
    /// the host was doing, as a crash would. Only the page itself may press it: a form on
    /// another site could otherwise post to it (browsers send such posts without asking).
    fn answer_page(method: &str, path: &str, headers: &Headers) -> Option<HttpResponse> {
        if method == "POST" && path == RESTART_PATH {
            if !from_this_host(headers) {
                let refusal =
                    serde_json::json!({ "error": "only this host's page may restart it" });
                return Some(HttpResponse::json(403, &refusal));
            }
            std::thread::spawn(|| {
                std::thread::sleep(RESTART_GRACE);
                std::process::exit(RESTART_EXIT_CODE);
            });
            let body = serde_json::json!({ "restarting": true });
            return Some(HttpResponse::json(202, &body));
        }
        pages::page(method, path, Host::Native)
    }

    /// Whether a request came from this host's own page: no `Origin` (not a browser), or the
    /// origin `http://<the Host header>`.
    fn from_this_host(headers: &Headers) -> bool {
        match (headers.get("origin"), headers.get("host")) {
            (None, _) => true,
            (Some(origin), Some(host)) => origin == format!("http://{host}"),
            (Some(_), None) => false,
        }
    }

    /// Exits when the supervisor's end of standard input closes (the supervisor is gone).
    fn watch_supervisor() {
        std::thread::spawn(|| {
            let mut byte = [0u8; 1];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut byte), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
    }
}
