//! `docs/getting-started.md` cannot rot: this test builds and runs the crate the guide
//! describes from the guide's own text, and performs its steps.
//!
//! # How the guide marks its blocks
//!
//! An HTML comment on the line right before a fenced block (invisible once rendered) names it:
//!
//! - `<!-- file: PATH -->`: the block is the whole of file `PATH` of the crate (`Cargo.toml`,
//!   `src/lib.rs`, `src/main.rs`, `tests/brew.rs`, `wrangler.toml`).
//! - `<!-- run: NAME -->`: a shell block the test runs or reads. `calls` (the curl calls) runs
//!   with bash against each host, its `http://127.0.0.1:8787/mcp` replaced by the host's URL;
//!   `worker-build` gives the arguments of the Worker build; `install` names the tool versions,
//!   checked against the workspace's pins.
//!
//! # What the test adds
//!
//! The crate is written to `target/getting-started/crate` (a fixed place, so that a second run
//! rebuilds nothing), with two changes to the `Cargo.toml` the user copies: an empty
//! `[workspace]` (the crate is not part of this workspace), and the guide's own
//! `[patch.crates-io]` line, which points `durable-mcp` at a checkout beside the crate, pointed
//! at this workspace's crate instead (its manifest names `durable-mcp-macros` by path, so that
//! follows). The line must be there, as the guide tells the user to write it while durable-mcp
//! is unpublished. The workspace's `Cargo.lock` is copied in first, so the crate builds with
//! the versions the workspace is tested with.
//!
//! Then, in parallel: `cargo test` and `cargo run` (target dir `target/getting-started/target`)
//! with the calls against the native host; and the Worker build (worker-build from
//! `cargo xtask test`, into the `target/workers` the other Worker tests share, whose
//! `[profile.worker]` the guide's equals) under `wrangler dev` with the same calls.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::Duration;

use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::workerd::{
    WorkerProcess, one_worker_at_a_time, worker_build, workspace_root,
};
use serde_json::{Value, json};

/// The guide, relative to the workspace root.
const GUIDE: &str = "docs/getting-started.md";
/// The endpoint the guide's calls name: both hosts' default.
const GUIDE_URL: &str = "http://127.0.0.1:8787/mcp";
/// The `[patch.crates-io]` line the guide's `Cargo.toml` has while durable-mcp is unpublished:
/// the crate from a checkout of the repository beside the user's crate.
const GUIDE_PATCH: &str =
    "[patch.crates-io]\ndurable-mcp = { path = \"../durable-mcp/durable-mcp\" }";

/// The guide's task tool, and the text its calls end with.
const TOOL: &str = "brew_tea";
const ANSWER: &str = "your green tea is ready";

/// The marked blocks of the guide.
#[derive(Debug)]
struct Guide {
    /// `<!-- file: PATH -->` blocks, by path.
    files: BTreeMap<String, String>,
    /// `<!-- run: NAME -->` blocks, by name.
    runs: BTreeMap<String, String>,
}

impl Guide {
    fn run(&self, name: &str) -> &str {
        self.runs
            .get(name)
            .unwrap_or_else(|| panic!("{GUIDE} has no block marked `<!-- run: {name} -->`"))
    }
}

fn guide_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        std::fs::read_to_string(workspace_root().join(GUIDE))
            .unwrap_or_else(|error| panic!("read {GUIDE}: {error}"))
    })
}

fn guide() -> &'static Guide {
    static BLOCKS: OnceLock<Guide> = OnceLock::new();
    BLOCKS.get_or_init(|| parse(guide_text()))
}

fn parse(text: &str) -> Guide {
    let mut guide = Guide {
        files: BTreeMap::new(),
        runs: BTreeMap::new(),
    };
    let mut lines = text.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        let Some(mark) = line
            .trim()
            .strip_prefix("<!--")
            .and_then(|rest| rest.strip_suffix("-->"))
        else {
            continue;
        };
        let (kind, name) = match mark.trim().split_once(':') {
            Some(("file", name)) => (&mut guide.files, name.trim()),
            Some(("run", name)) => (&mut guide.runs, name.trim()),
            _ => continue,
        };
        let at = number + 1;
        let fence = lines.next().map(|(_, line)| line).unwrap_or_default();
        assert!(
            fence.starts_with("```"),
            "{GUIDE}:{at}: the line after `{}` must open a fenced block",
            line.trim()
        );
        let mut body = String::new();
        loop {
            let (_, line) = lines
                .next()
                .unwrap_or_else(|| panic!("{GUIDE}:{at}: the block is never closed"));
            if line.trim_end() == "```" {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        let previous = kind.insert(name.to_owned(), body);
        assert!(previous.is_none(), "{GUIDE}:{at}: `{name}` is marked twice");
    }
    guide
}

/// Where the test keeps the crate and its native build.
fn scratch() -> PathBuf {
    workspace_root().join("target/getting-started")
}

/// Writes `contents` to `path` unless it holds them already (an unchanged file keeps its
/// modification time, so cargo rebuilds nothing).
fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return;
    }
    std::fs::create_dir_all(path.parent().expect("a file in a directory")).expect("mkdir");
    std::fs::write(path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// The guide's crate, written once per test process and its dependencies fetched.
fn guide_crate() -> &'static Path {
    static CRATE: OnceLock<PathBuf> = OnceLock::new();
    CRATE.get_or_init(|| {
        let root = workspace_root();
        let dir = scratch().join("crate");
        let guide = guide();
        for required in ["Cargo.toml", "src/lib.rs", "src/main.rs", "wrangler.toml"] {
            assert!(
                guide.files.contains_key(required),
                "{GUIDE} has no block marked `<!-- file: {required} -->`"
            );
        }
        for (path, contents) in &guide.files {
            let mut contents = contents.clone();
            if path == "Cargo.toml" {
                assert!(
                    contents.contains(GUIDE_PATCH),
                    "{GUIDE}'s Cargo.toml lacks the line for an unpublished durable-mcp:\n{GUIDE_PATCH}"
                );
                contents = contents.replacen(
                    GUIDE_PATCH,
                    &format!(
                        "[patch.crates-io]\ndurable-mcp = {{ path = {:?} }}",
                        root.join("durable-mcp")
                    ),
                    1,
                );
                contents.push_str(
                    "\n# Added by tests/tests/getting_started.rs: a workspace of its own.\n\
                     [workspace]\n",
                );
            }
            write_if_changed(&dir.join(path), &contents);
        }
        // A source or test an earlier version of the guide had is no part of this one.
        for folder in ["src", "tests"] {
            for entry in std::fs::read_dir(dir.join(folder)).into_iter().flatten() {
                let path = entry.expect("a directory entry").path();
                let relative = path.strip_prefix(&dir).expect("inside the crate");
                let named = relative
                    .to_str()
                    .is_some_and(|r| guide.files.contains_key(r));
                if path.is_file() && !named {
                    std::fs::remove_file(&path).expect("remove a stale file");
                }
            }
        }
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
        // Resolves against the copied lockfile (dropping what the crate does not use) and
        // downloads the sources, once, before the native and Worker builds run side by side.
        let output = cargo(&dir).arg("fetch").output().expect("run cargo fetch");
        assert_success("cargo fetch", &output);
        dir
    })
}

/// cargo in `dir`, building into `target/getting-started/target`.
fn cargo(dir: &Path) -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", scratch().join("target"));
    command
}

fn assert_success(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs the guide's calls against `url` and checks what they answer.
fn run_calls(url: &str) {
    let script = guide().run("calls");
    assert_eq!(
        script.matches(GUIDE_URL).count(),
        1,
        "the calls name {GUIDE_URL} once, in `URL=`"
    );
    let output = Command::new("bash")
        .args(["-c", &script.replace(GUIDE_URL, url)])
        .output()
        .expect("run bash (the calls also need curl)");
    assert_success("the calls", &output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let answers: Vec<Value> = stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("an answer that is not JSON ({e}): {line}\n{stdout}"))
        })
        .collect();
    let [list, working, completed] = answers.as_slice() else {
        panic!("expected three answers (tools/list and two tasks/get):\n{stdout}");
    };
    let tool = list["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == TOOL))
        .unwrap_or_else(|| panic!("tools/list lists no {TOOL}: {list}"));
    assert!(
        tool["inputSchema"]["properties"]["tea"]["description"].is_string(),
        "the input schema carries the doc comments: {tool}"
    );
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert_eq!(completed["result"]["status"], "completed", "{completed}");
    assert_eq!(
        completed["result"]["result"]["content"][0]["text"], ANSWER,
        "{completed}"
    );
    let id = completed["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no taskId: {completed}"));
    // The same task, as a conforming client reads it.
    let task = McpClient::new(url).result("tasks/get", json!({ "taskId": id }));
    assert_eq!(task["result"]["content"][0]["text"], ANSWER, "{task}");
}

/// The guide's `cargo run`, in its own process group, killed with it.
struct NativeHost {
    child: Child,
    url: String,
}

impl NativeHost {
    /// `cargo run` in `dir` on a free port with its state in `data`; waits for the URL it
    /// prints.
    fn start(dir: &Path, data: &Path) -> Self {
        let mut child = cargo(dir)
            .args(["run", "--quiet"])
            .env("PORT", "0")
            .env("DURABLE_MCP_DATA", data)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("run cargo run");
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("http://") {
                    let _ = sender.send(line);
                }
            }
        });
        let mut host = NativeHost {
            child,
            url: String::new(),
        };
        let line = receiver
            .recv_timeout(Duration::from_secs(300))
            .expect("`cargo run` printed no URL within 300 s");
        // What the guide says it prints (there on the default port).
        const SERVING: &str = "durable-mcp: serving MCP at ";
        assert!(
            guide_text().contains(&format!("`{SERVING}{GUIDE_URL}`")),
            "{GUIDE} no longer quotes what `cargo run` prints: {line:?}"
        );
        host.url = line
            .strip_prefix(SERVING)
            .unwrap_or_else(|| panic!("`cargo run` printed {line:?}, not `{SERVING}<url>`"))
            .to_owned();
        host
    }
}

impl Drop for NativeHost {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

#[test]
fn natively_the_guide_crate_passes_its_test_and_serves_its_task() {
    let dir = guide_crate();

    // Step 5: `cargo test` (which also builds the binary `cargo run` runs).
    let output = cargo(dir).arg("test").output().expect("run cargo test");
    assert_success("cargo test", &output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("test result: ok.")
                && !line.starts_with("test result: ok. 0 passed")),
        "the guide's test did not run:\n{stdout}"
    );

    // Step 4: `cargo run` and the calls.
    let data = tempfile::tempdir().unwrap();
    let host = NativeHost::start(dir, data.path());
    run_calls(&host.url);
}

/// The arguments of the guide's `worker-build` line; every other line of its block must be
/// one the test performs in its own way.
fn worker_build_args() -> Vec<String> {
    let block = guide().run("worker-build");
    let mut args = None;
    for line in block.lines().map(str::trim).filter(|line| !line.is_empty()) {
        if let Some(rest) = line.strip_prefix("worker-build ") {
            assert!(args.is_none(), "two worker-build lines:\n{block}");
            args = Some(rest.split_whitespace().map(str::to_owned).collect());
        } else {
            // `workerd::worker_build` points WASM_BINDGEN_BIN at the tools `cargo xtask test`
            // installed.
            assert!(
                line.starts_with("export WASM_BINDGEN_BIN="),
                "the Worker build does a step the test does not know: {line}"
            );
        }
    }
    args.unwrap_or_else(|| panic!("no worker-build line:\n{block}"))
}

#[test]
fn as_a_worker_under_wrangler_dev_the_guide_crate_serves_its_task() {
    let dir = guide_crate();
    let status = worker_build(dir)
        .args(worker_build_args())
        .stdin(Stdio::null())
        .status()
        .expect("run worker-build");
    assert!(status.success(), "worker-build failed in {}", dir.display());
    assert!(dir.join("build/index.js").exists(), "no build/index.js");

    let _one = one_worker_at_a_time();
    let state = tempfile::tempdir().unwrap();
    let worker = WorkerProcess::start(dir, state.path());
    run_calls(&worker.mcp_url());
}

/// The value of the first line `<prefix>"<value>"` of `text`.
fn quoted_after<'a>(text: &'a str, prefix: &str, whence: &str) -> &'a str {
    text.lines()
        .find_map(|line| line.trim().strip_prefix(prefix))
        .and_then(|rest| rest.split('"').nth(1))
        .unwrap_or_else(|| panic!("{whence} has no line `{prefix}\"...\"`"))
}

#[test]
fn the_guide_pins_the_versions_the_workspace_pins() {
    let root = workspace_root();
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
    };
    let manifest = read("Cargo.toml");
    let tools = read("xtask/src/worker_tools.rs");
    let guide = guide();
    let cargo_toml = &guide.files["Cargo.toml"];
    let install = guide.run("install");

    // Until durable-mcp is published, the guide and the README say where to take it from.
    assert!(
        cargo_toml.contains(GUIDE_PATCH),
        "{GUIDE}'s Cargo.toml lacks:\n{GUIDE_PATCH}"
    );
    assert!(
        read("README.md").contains(GUIDE_PATCH),
        "README.md's dependency lines lack:\n{GUIDE_PATCH}"
    );
    // `worker = "=0.8.7"` and `wasm-bindgen = "=0.2.130"`, as the workspace writes them.
    for dependency in ["worker", "wasm-bindgen"] {
        let pin = manifest
            .lines()
            .find(|line| line.starts_with(&format!("{dependency} = ")))
            .unwrap_or_else(|| panic!("the workspace's Cargo.toml pins no {dependency}"));
        assert!(
            cargo_toml.lines().any(|line| line == pin),
            "the guide's Cargo.toml lacks the workspace's `{pin}`"
        );
    }
    // The tools `cargo xtask test` installs.
    let worker_build = quoted_after(&tools, "const WORKER_BUILD: &str = ", "worker_tools.rs");
    let wasm_bindgen = quoted_after(&tools, "const WASM_BINDGEN: &str = ", "worker_tools.rs");
    for expected in [
        format!("cargo install worker-build --version {worker_build} "),
        format!("cargo install wasm-bindgen-cli --version {wasm_bindgen}"),
        "rustup target add wasm32-unknown-unknown".to_owned(),
    ] {
        assert!(
            install.contains(&expected),
            "the guide's install block lacks `{expected}`:\n{install}"
        );
    }
    // wrangler, as tests/workerd pins it.
    let package: Value = serde_json::from_str(&read("tests/workerd/package.json")).unwrap();
    let wrangler = package["dependencies"]["wrangler"].as_str().unwrap();
    let named: Vec<&str> = guide_text()
        .split("wrangler@")
        .skip(1)
        .map(|rest| {
            rest.split(|c: char| c.is_whitespace() || c == '`')
                .next()
                .unwrap()
        })
        .collect();
    assert!(
        !named.is_empty() && named.iter().all(|version| *version == wrangler),
        "the guide names wrangler {named:?}; tests/workerd pins {wrangler}"
    );
}
