//! An npx package set (Node 22 and a pinned tool), installed once in npm's cache; its tools
//! then run on the `PATH` npx gives its commands, which saves npx's start-up on each run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use xtask::Result;

use super::say;

/// An npx package set, installed in npm's cache, and the `PATH` npx runs its commands with.
pub(super) struct Npx {
    /// `PATH` with the package set's `node_modules/.bin` (holding `node` and the tool) first.
    path: String,
}

impl Npx {
    /// Installs `packages` through npx unless npm's cache already holds them, and learns the
    /// `PATH` npx gives commands run with them. Runs in `cwd`, a directory without a
    /// `package.json` above it, so npx resolves nothing from a local project.
    pub(super) fn provision(packages: &[&str], cwd: &Path) -> Result<Npx> {
        const MARKER: &str = "xtask-npx-path=";
        let mut command = Command::new("npx");
        command.current_dir(cwd).arg("-y");
        for package in packages {
            command.args(["-p", package]);
        }
        command.args(["-c", &format!("printf '{MARKER}%s\\n' \"$PATH\"")]);
        let started = Instant::now();
        let output = command
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run npx (Node.js and npm are needed): {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let path = stdout.lines().find_map(|line| line.strip_prefix(MARKER));
        match path {
            Some(path) if output.status.success() => {
                say(format_args!(
                    "npx {}: ready in {:.1?}",
                    packages.join(" "),
                    started.elapsed()
                ));
                Ok(Npx {
                    path: path.to_owned(),
                })
            }
            _ => Err(format!(
                "npx -y -p {} failed ({}):\n{}",
                packages.join(" -p "),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
            .into()),
        }
    }

    /// A command running `program` from this package set (or from the rest of `PATH`).
    pub(super) fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("PATH", &self.path);
        command
    }
}
