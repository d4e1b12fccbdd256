//! Running other programs: the workspace's paths, cargo builds, a process with a time limit
//! (and every process it started), and npm installs.

use std::error::Error;
use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A result whose error is any error.
pub type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

/// A copy of the lockfile `node_modules` was installed from, inside `node_modules`.
const NPM_INSTALL_STAMP: &str = ".xtask-installed-package-lock.json";

/// The workspace root (this crate's parent directory).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` if set (relative to the current directory,
/// as cargo reads it), `<root>/target` otherwise.
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => std::path::absolute(&dir).unwrap_or_else(|_| PathBuf::from(dir)),
        None => root.join("target"),
    }
}

/// A command running cargo: inside `cargo xtask`, `CARGO` names the cargo that runs us, so
/// every build uses the same toolchain.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The profile a binary is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Debug: the servers of the checks and of the smoke runs, which do too little work for
    /// optimisation to matter. On a fresh machine it costs about what release does on top of
    /// what `cargo test` and xtask compiled (the servers need other features of durable-mcp),
    /// and after an edit it rebuilds in about a second where release takes over ten.
    Debug,
    /// Release: the servers the benches measure.
    Release,
}

/// Builds the binary of `package` and returns its executable, as cargo reports it.
pub fn build_binary(package: &str, profile: Profile) -> Result<PathBuf> {
    build_named_binary(package, package, profile)
}

/// Builds the binaries of `package` and returns the executable of its binary `bin` (for a
/// package with more than one: `conformance-server`'s `conformance-axum`).
pub fn build_named_binary(package: &str, bin: &str, profile: Profile) -> Result<PathBuf> {
    let mut command = cargo();
    command
        .current_dir(workspace_root())
        .args(["build", "--package", package]);
    if profile == Profile::Release {
        command.arg("--release");
    }
    let shown: Vec<_> = command
        .get_args()
        .map(|arg| arg.to_string_lossy())
        .collect();
    println!("xtask: cargo {}", shown.join(" "));
    command
        .args(["--message-format", "json-render-diagnostics"])
        .stderr(Stdio::inherit());
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!("building {package} failed ({})", output.status).into());
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == bin)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo built {package} but reported no executable {bin}").into())
}

/// Installs the npm packages of the project `relative` (to `root`: `tests/mcp-clients`,
/// `tests/workerd`...) with `npm ci`, unless its `node_modules` was installed from the current
/// lockfile (a copy of which is kept inside it).
pub fn npm_ci(root: &Path, relative: &str) -> Result<()> {
    let dir = root.join(relative);
    let lockfile = fs::read(dir.join("package-lock.json"))
        .map_err(|e| format!("cannot read {relative}/package-lock.json: {e}"))?;
    let stamp = dir.join("node_modules").join(NPM_INSTALL_STAMP);
    if fs::read(&stamp).is_ok_and(|installed| installed == lockfile) {
        return Ok(());
    }
    println!("xtask: npm ci --prefix {relative}");
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run npm (Node.js and npm are needed): {e}"))?;
    if !status.success() {
        return Err(format!("npm ci --prefix {relative} failed ({status})").into());
    }
    fs::write(&stamp, lockfile).map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(())
}

/// What a finished (or timed-out) child process did.
#[derive(Debug)]
pub struct Run {
    /// Its exit status; `None` if it was killed for running too long.
    pub status: Option<ExitStatus>,
    /// Everything it wrote to stdout, colours stripped.
    pub stdout: String,
    /// Everything it wrote to stderr, colours stripped.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Run {
    /// Whether it exited with success.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|status| status.success())
    }

    /// The exit status in words: `exit status: 1`, or that it was killed.
    pub fn status_text(&self) -> String {
        match self.status {
            Some(status) => status.to_string(),
            None => "killed after its time limit".to_owned(),
        }
    }

    /// The process's output, for a failure message.
    pub fn transcript(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }
}

/// Runs `command` with its output captured, killing it (and every process it started) if it
/// runs longer than `limit`.
pub fn run_with_limit(command: &mut Command, limit: Duration) -> Result<Run> {
    let shown = command.get_program().to_string_lossy().into_owned();
    let started = Instant::now();
    // A process group of its own, so a timeout can end the tool's children too.
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > limit {
            // Kill the group by its id (the child's pid), then reap the child.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(50));
    };
    let elapsed = started.elapsed();
    Ok(Run {
        status,
        stdout: strip_colours(&stdout.join().unwrap_or_default()),
        stderr: strip_colours(&stderr.join().unwrap_or_default()),
        elapsed,
    })
}

/// `text` without its ANSI colour sequences (`ESC [ … m`), which tools print even to a pipe.
fn strip_colours(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        plain.push_str(&rest[..at]);
        let sequence = &rest[at + 2..];
        let end = sequence.find(|c: char| !(c.is_ascii_digit() || c == ';'));
        rest = match end {
            Some(end) if sequence[end..].starts_with('m') => &sequence[end + 1..],
            _ => sequence,
        };
    }
    plain.push_str(rest);
    plain
}

/// Reads a child's pipe to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs `f`, a helper of the tests' that reports a failure by panicking: its value, or its
/// panic's message as the error.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run over its limit is killed with every process it started, so its pipes close.
    #[test]
    fn a_run_over_its_limit_is_killed_with_its_children() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & echo started; sleep 30"]);
        let run = run_with_limit(&mut command, Duration::from_millis(300)).unwrap();
        assert!(run.status.is_none());
        assert_eq!(run.stdout, "started\n");
        assert!(
            run.elapsed < Duration::from_secs(10),
            "took {:?}",
            run.elapsed
        );
    }

    /// A run within its limit reports its exit status and output.
    #[test]
    fn a_run_within_its_limit_reports_status_and_output() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo err >&2; exit 5"]);
        let run = run_with_limit(&mut command, Duration::from_secs(30)).unwrap();
        assert_eq!(run.status.and_then(|status| status.code()), Some(5));
        assert_eq!(
            (run.stdout.as_str(), run.stderr.as_str()),
            ("out\n", "err\n")
        );
    }

    /// Colour sequences go; everything else stays.
    #[test]
    fn colours_are_stripped() {
        let text = "\u{1b}[31mUnexpected failures\u{1b}[0m:\n  \u{1b}[1;32m✓\u{1b}[0m x [y]";
        assert_eq!(strip_colours(text), "Unexpected failures:\n  ✓ x [y]");
    }
}
