//! How much a bench command does ([`Scale`]), and how its tables judge a target ([`verdict`]):
//! a smoke run's tiny counts make every figure meaningless, so its tables (printed all the
//! same, so that their code runs) judge none.

use std::sync::atomic::{AtomicBool, Ordering};

use xtask::Result;

/// Set by a smoke run, for [`verdict`].
static SMOKE: AtomicBool = AtomicBool::new(false);

/// How much a bench command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The measurement, with the counts the targets are about.
    Full,
    /// A smoke run: tiny counts, debug builds where they do, no target judged.
    Smoke,
}

impl Scale {
    /// The arguments after `command` (`bench`, `bench worker`, `size`): none, or `--smoke`.
    pub fn parse(command: &str, args: &[&str]) -> Result<Scale> {
        match args {
            [] => Ok(Scale::Full),
            ["--smoke"] => Ok(Scale::Smoke),
            _ => Err(
                format!("unknown arguments {args:?}; usage: cargo xtask {command} [--smoke]")
                    .into(),
            ),
        }
    }

    /// Says what a smoke run is, once, before `command` starts; the verdicts follow it.
    pub fn announce(self, command: &str) {
        if self == Scale::Smoke && !SMOKE.swap(true, Ordering::Relaxed) {
            println!(
                "{command} --smoke: a smoke run, with tiny counts, to show that the command \
                 works; no target is judged"
            );
        }
    }
}

/// Whether a target was met, as the tables say it; nothing is judged in a smoke run.
pub fn verdict(met: bool) -> &'static str {
    if SMOKE.load(Ordering::Relaxed) {
        "not judged (smoke run)"
    } else if met {
        "met"
    } else {
        "MISSED"
    }
}
