//! The official client libraries, each driven by a script in `tests/mcp-clients/` on the
//! machine's Node (installed with `npm ci`) or Python (in a virtual environment made with
//! `venv`, installed with pip).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use xtask::Result;
use xtask::process::{npm_ci, run_with_limit, target_dir};

use super::{record, say};

/// The npm project of the clients run on the machine's Node, and the Python clients'
/// requirements, relative to the workspace root.
const CLIENTS_DIR: &str = "tests/mcp-clients";

/// The ext-tasks driver (2026-07-28; the library polling, then fed by a `subscriptions/listen`
/// stream the script opens, with `listen-stream.mjs`), relative to [`CLIENTS_DIR`].
const EXT_TASKS_DRIVER: &str = "ext-tasks-drive.mjs";

/// The v1 TypeScript SDK driver (2025-11-25 experimental tasks), relative to [`CLIENTS_DIR`].
const V1_TASKS_DRIVER: &str = "v1-tasks-drive.mjs";

/// The Python SDK driver (2025-11-25, legacy mode), relative to [`CLIENTS_DIR`].
const PY_LEGACY_DRIVER: &str = "py_legacy_drive.py";

/// The Python SDK driver (2026-07-28 without the Tasks extension, the SDK's default mode),
/// relative to [`CLIENTS_DIR`].
const PY_DEFAULT_DRIVER: &str = "py_default_drive.py";

/// The Python drivers' pinned packages, relative to [`CLIENTS_DIR`].
const PY_REQUIREMENTS: &str = "requirements.txt";

/// The virtual environment the Python drivers run in, relative to the target directory.
const PY_VENV: &str = "py-clients";

/// The Python the virtual environment is made with, from `PATH`.
const PYTHON: &str = "python3";

/// What the virtual environment was installed from (the Python version and the requirements),
/// inside the environment.
const PY_INSTALL_STAMP: &str = ".xtask-installed-requirements.txt";

/// The longest one client driver may take (each gives up on its own after 120 s).
const DRIVER_TIMEOUT: Duration = Duration::from_secs(180);

/// The client drivers in `tests/mcp-clients`, with what they were installed with.
pub(super) struct Drivers {
    /// The clients' directory.
    clients: PathBuf,
    /// Whether `npm ci` installed the Node clients (the error if not).
    node_modules: Result<(), String>,
    /// The Python virtual environment's interpreter (the error if there is none).
    venv: Result<PathBuf, String>,
}

impl Drivers {
    /// Installs the Node and the Python clients, once for both hosts; a failed install fails
    /// every driver that needs it.
    pub(super) fn install(root: &Path) -> Drivers {
        let clients = root.join(CLIENTS_DIR);
        let node_modules = npm_ci(root, CLIENTS_DIR).map_err(|e| e.to_string());
        let venv = python_venv(PYTHON, &clients, &target_dir(root).join(PY_VENV))
            .map_err(|e| e.to_string());
        Drivers {
            clients,
            node_modules,
            venv,
        }
    }

    /// Runs every driver against `url`, naming each check with `host` appended; `env` is
    /// set for each (a bearer token for a server behind its application's check).
    pub(super) fn run_all(
        &self,
        failed: &mut Vec<String>,
        url: &str,
        host: &str,
        env: &[(&str, &str)],
    ) {
        for (check, script) in [
            ("ext-tasks driver", EXT_TASKS_DRIVER),
            ("v1 SDK tasks driver", V1_TASKS_DRIVER),
        ] {
            let outcome = match &self.node_modules {
                Ok(()) => {
                    let mut command = Command::new("node");
                    command.arg(script).envs(env.iter().copied());
                    driver(command, &self.clients, url)
                }
                Err(error) => Err(error.clone().into()),
            };
            record(failed, format!("{check}{host}"), outcome);
        }
        for (check, script) in [
            ("Python legacy driver", PY_LEGACY_DRIVER),
            ("Python default-mode driver", PY_DEFAULT_DRIVER),
        ] {
            let outcome = match &self.venv {
                Ok(python) => {
                    let mut command = Command::new(python);
                    command.arg(script).envs(env.iter().copied());
                    driver(command, &self.clients, url)
                }
                Err(error) => Err(error.clone().into()),
            };
            record(failed, format!("{check}{host}"), outcome);
        }
    }
}

/// Creates the Python clients' virtual environment `venv` with `python` and installs
/// [`PY_REQUIREMENTS`] into it with pip, unless it was installed from the same requirements
/// by the same Python (a copy of both is kept inside it); returns its interpreter. Python 3
/// with its `venv` module must be on the machine: without it this fails saying so.
fn python_venv(python: &str, clients: &Path, venv: &Path) -> Result<PathBuf> {
    let requirements = fs::read_to_string(clients.join(PY_REQUIREMENTS))
        .map_err(|e| format!("cannot read {CLIENTS_DIR}/{PY_REQUIREMENTS}: {e}"))?;
    let version = Command::new(python)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "cannot run {python} ({e}): the Python driver needs Python 3 with its venv \
                 module on the machine (on Debian: apt-get install python3 python3-venv)"
            )
        })?;
    if !version.status.success() {
        return Err(format!(
            "{python} --version failed ({}): {}",
            version.status,
            String::from_utf8_lossy(&version.stderr).trim()
        )
        .into());
    }
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let stamp_text = format!("# {version}\n{requirements}");
    let interpreter = venv.join("bin").join("python");
    let stamp = venv.join(PY_INSTALL_STAMP);
    if interpreter.is_file() && fs::read_to_string(&stamp).is_ok_and(|text| text == stamp_text) {
        return Ok(interpreter);
    }
    // Made anew, so packages dropped from the requirements go too (as `npm ci` does).
    if venv.exists() {
        fs::remove_dir_all(venv).map_err(|e| format!("cannot clear {}: {e}", venv.display()))?;
    }
    say(format_args!(
        "{python} -m venv {} ({version}); pip install -r {CLIENTS_DIR}/{PY_REQUIREMENTS}",
        venv.display()
    ));
    let created = Command::new(python)
        .args(["-m", "venv"])
        .arg(venv)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {python} -m venv: {e}"))?;
    if !created.status.success() {
        return Err(format!(
            "{python} -m venv failed ({}): the Python driver needs {version} with its venv \
             module and ensurepip (on Debian: apt-get install python3-venv):\n{}{}",
            created.status,
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr).trim_end()
        )
        .into());
    }
    let status = Command::new(&interpreter)
        .args(["-m", "pip", "install", "--quiet"])
        .args(["--disable-pip-version-check", "--no-input", "--requirement"])
        .arg(clients.join(PY_REQUIREMENTS))
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run pip in {}: {e}", venv.display()))?;
    if !status.success() {
        return Err(
            format!("pip install -r {CLIENTS_DIR}/{PY_REQUIREMENTS} failed ({status})").into(),
        );
    }
    fs::write(&stamp, stamp_text).map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(interpreter)
}

/// Runs a client driver (`command`, whose arguments so far name the script) in `clients`
/// against `url`; it passes if the driver exits 0, having printed one line per outcome.
fn driver(mut command: Command, clients: &Path, url: &str) -> Result<String> {
    command.current_dir(clients).arg(url);
    let run = run_with_limit(&mut command, DRIVER_TIMEOUT)?;
    let outcomes: Vec<&str> = run.stdout.lines().map(str::trim_end).collect();
    if run.succeeded() {
        return Ok(format!(
            "exit 0 ({:.1?})\n  {}",
            run.elapsed,
            outcomes.join("\n  ")
        ));
    }
    Err(format!("{}\n{}", run.status_text(), run.transcript()).into())
}

#[cfg(test)]
mod tests {
    use xtask::process::workspace_root;

    use super::{CLIENTS_DIR, python_venv};

    /// Without Python the Python checks fail, saying what the machine lacks.
    #[test]
    fn a_missing_python_fails_saying_so() {
        let clients = workspace_root().join(CLIENTS_DIR);
        let venv = tempfile::tempdir().unwrap();
        let error = python_venv("python3-not-on-this-machine", &clients, venv.path())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("cannot run python3-not-on-this-machine")
                && error.contains("needs Python 3 with its venv module"),
            "{error}"
        );
    }
}
