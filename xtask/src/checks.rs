//! `cargo xtask test`: every check CI runs, in the order that fails fastest.
//!
//! It installs what the checks need first (the `wasm32-unknown-unknown` target, through
//! rustup; the Worker tools, see `worker_tools`; the npm packages of the MCP clients, see
//! `clients`, and of the authorization tests, `tests/oauth`), so the one command works on a fresh machine.

use std::process::Command;

use xtask::Result;
use xtask::process::{npm_ci, workspace_root};

/// The target the crate must keep building for (Cloudflare Workers).
const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// The workspace test step's command. Later steps that run one of its test binaries again use
/// the same packages and features, so cargo reuses that build instead of making another.
pub(crate) const WORKSPACE_TESTS: [&str; 3] = ["test", "--workspace", "--all-features"];

/// Runs every check; stops at the first that fails.
pub fn run() -> Result<()> {
    ensure_wasm_target()?;
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    let clippy = [
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
    ];
    cargo(&[&clippy[..], &["-D", "warnings"]].concat(), &[])?;
    let doc = ["doc", "--workspace", "--no-deps", "--all-features"];
    cargo(&doc, &[("RUSTDOCFLAGS", "-Dwarnings")])?;
    // Every change to the public API is deliberate: the rendered API (both targets) against
    // its listing.
    let wasm_doc = [
        "doc",
        "--package",
        "durable-mcp",
        "--no-deps",
        "--target",
        WASM_TARGET,
    ];
    let wasm_doc = [&wasm_doc[..], &["--features", "cloudflare"]].concat();
    cargo(&wasm_doc, &[("RUSTDOCFLAGS", "-Dwarnings")])?;
    crate::public_api::check(false)?;
    // The published crates as packaged, and on their declared rust-version.
    crate::publish::check()?;
    // The crate without its default features (OAuth, logging, the inspector, the 2025 lane):
    // without a host on both targets (what a Worker's own crates may link on wasm32), and with
    // each host. Code only a host or a feature uses must be gated with it. Natively its unit
    // tests run too: they check the refusal of the settings a left-out feature reads, and of a
    // 2025 request.
    let lean = ["--package", "durable-mcp", "--no-default-features"];
    let native = ["--features", "native,testing", "--all-targets"];
    let worker = ["--features", "cloudflare", "--target", WASM_TARGET];
    for flags in [&[][..], &["--target", WASM_TARGET], &native, &worker] {
        cargo(
            &[&["clippy"][..], &lean, flags, &["--", "-D", "warnings"]].concat(),
            &[],
        )?;
    }
    cargo(&[&["test"][..], &lean, &native].concat(), &[])?;
    // The Cloudflare host and the Worker crates exist only on wasm32: lint them there.
    let clippy_worker = [
        "clippy",
        "--package",
        "durable-mcp",
        "--package",
        "report-task",
        "--package",
        "conformance-server",
        "--package",
        "bench-worker",
        "--package",
        "bench-floor-rs",
        "--package",
        "story-demo",
        "--package",
        "hello",
        "--target",
        WASM_TARGET,
        "--features",
        "durable-mcp/cloudflare",
        "--",
        "-D",
        "warnings",
    ];
    cargo(&clippy_worker, &[])?;
    // The Worker tests build a test Worker and run it under workerd.
    xtask::worker_tools::ensure()?;
    // The upstream schemas the black-box suite validates wire messages against.
    let schemas = crate::wire_schemas::ensure()?;
    // The authorization server and official OAuth clients of the MCP authorization tests.
    npm_ci(&workspace_root(), "tests/oauth")?;
    cargo(
        &WORKSPACE_TESTS,
        &[("DURABLE_MCP_SCHEMAS", &schemas.to_string_lossy())],
    )?;
    // Official MCP clients and the conformance suite against the fixture server.
    crate::clients::run()?;
    crate::smoke::run()?;
    // The story demo's page in headless Chromium, on both hosts.
    crate::browser::run()
}

fn ensure_wasm_target() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("rustup is needed to add the {WASM_TARGET} target: {e}"))?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|line| line.trim() == WASM_TARGET)
    {
        return Ok(());
    }
    step(Command::new("rustup").args(["target", "add", WASM_TARGET]))
}

pub(crate) fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let mut command = xtask::process::cargo();
    command.args(args).envs(env.iter().copied());
    step(&mut command)
}

pub(crate) fn step(command: &mut Command) -> Result<()> {
    // No step reads input. cargo's probe of rustc (`rustc -`) reads standard input as source,
    // and cargo caches a failed probe in the target directory, failing every later step. Seen
    // here when `/dev/null` had been replaced by a regular file that collected diagnostics:
    // give each step no input, and have cargo probe afresh instead of trusting that cache.
    command
        .stdin(std::process::Stdio::null())
        .env("CARGO_CACHE_RUSTC_INFO", "0");
    let program = command.get_program().to_string_lossy();
    let program = program.rsplit('/').next().unwrap_or_default().to_owned();
    let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
    let shown = format!("{program} {}", args.join(" "));
    println!("xtask test: {shown}");
    let status = command.status().map_err(|e| format!("{shown}: {e}"))?;
    if !status.success() {
        return Err(format!("{shown} failed ({status})").into());
    }
    Ok(())
}
