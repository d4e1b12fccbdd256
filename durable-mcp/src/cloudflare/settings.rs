//! The Worker's settings, read from its variables and secrets (`[vars]` in wrangler.toml,
//! `wrangler secret put`, or `wrangler dev --var NAME:VALUE`) by the hosts' one reader
//! ([`crate::settings`]).

use std::cell::OnceCell;
use std::rc::Rc;
use std::time::Duration;

use worker::Env;

#[cfg(feature = "logging")]
use crate::log_filter::Filter;
#[cfg(feature = "logging")]
use crate::settings::WorkerLogFormat;
use crate::settings::{
    self, HAND_OFF_VAR, LEASE_VAR, LOG_FILTER_VAR, ServerSettings, SettingError, Source,
};

/// How long an activation may run before it hands off to a fresh alarm invocation. Cloudflare
/// stops an alarm handler after 15 minutes of wall-clock time.
pub const DEFAULT_HAND_OFF: Duration = Duration::from_secs(10 * 60);

/// How long after an activation starts its task runs again if that activation died with its
/// isolate. Longer than the hand-off, so a live activation is never doubled. (An engine
/// elsewhere, such as the native host's, presumes an activation dead sooner: its host sees
/// the activation's future dropped.)
pub const DEFAULT_RUNNER_LEASE: Duration = Duration::from_secs(15 * 60);

impl Source for Env {
    fn get(&self, name: &str) -> Option<String> {
        // A Worker sees secrets and plain variables alike.
        self.var(name).ok().map(|value| value.to_string())
    }
}

/// The durations a TaskRunner runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunnerSettings {
    /// [`HAND_OFF_VAR`]: see [`DEFAULT_HAND_OFF`].
    pub(crate) hand_off: Duration,
    /// [`LEASE_VAR`]: see [`DEFAULT_RUNNER_LEASE`]. Also how far ahead every alarm handler
    /// first sets its backstop alarm, in case the handler dies.
    pub(crate) lease: Duration,
}

impl RunnerSettings {
    /// The settings in `source`.
    fn read(source: &dyn Source) -> Result<Self, SettingError> {
        let hand_off = settings::duration(source, HAND_OFF_VAR)?.unwrap_or(DEFAULT_HAND_OFF);
        let lease = settings::duration(source, LEASE_VAR)?.unwrap_or(DEFAULT_RUNNER_LEASE);
        Ok(RunnerSettings {
            hand_off,
            lease: lease.max(hand_off),
        })
    }

    /// The settings in `env`. The fetch handler refuses every request while one is unusable
    /// ([`WorkerSettings`]), so a TaskRunner meets one only on an alarm: it logs it and runs
    /// with the defaults, which keeps the tasks in flight going.
    pub(crate) fn from_env(env: &Env) -> Self {
        RunnerSettings::read(env).unwrap_or_else(|error| {
            tracing::error!(target: crate::core::trace::TARGET, "{error}");
            RunnerSettings {
                hand_off: DEFAULT_HAND_OFF,
                lease: DEFAULT_RUNNER_LEASE,
            }
        })
    }
}

/// Every setting of the Worker, read and checked once per isolate.
#[derive(Debug)]
pub(crate) struct WorkerSettings {
    /// What the settings change on every server the Worker serves.
    pub(crate) server: ServerSettings,
    /// The inspector's token, which also opens the wake path.
    #[cfg(feature = "inspector")]
    pub(crate) inspector_token: Option<String>,
}

thread_local! {
    /// The isolate's settings, or why they are unusable.
    static WORKER_SETTINGS: OnceCell<Result<Rc<WorkerSettings>, SettingError>> =
        const { OnceCell::new() };
}

impl WorkerSettings {
    /// The settings of this isolate (the variables of one deploy do not change under it).
    ///
    /// # Errors
    ///
    /// The first unusable setting, with how to fix it: the fetch handler answers every request
    /// with it rather than serve with a setting it cannot honour.
    pub(crate) fn of_isolate(env: &Env) -> Result<Rc<WorkerSettings>, SettingError> {
        WORKER_SETTINGS.with(|cell| {
            cell.get_or_init(|| WorkerSettings::read(env).map(Rc::new))
                .clone()
        })
    }

    fn read(source: &dyn Source) -> Result<Self, SettingError> {
        // Checked here too, so that a bad value shows at the first request, not at an alarm.
        RunnerSettings::read(source)?;
        #[cfg(not(feature = "logging"))]
        settings::refuse_without(
            "logging",
            source,
            &[LOG_FILTER_VAR, settings::LOG_FORMAT_VAR],
        )?;
        #[cfg(not(feature = "inspector"))]
        settings::refuse_without("inspector", source, &settings::INSPECTOR_TOKEN_VARS)?;
        #[cfg(feature = "logging")]
        if let Some(filter) = source.get(LOG_FILTER_VAR)
            && let Err(error) = Filter::parse(&filter)
        {
            return Err(SettingError(format!(
                "{LOG_FILTER_VAR}={filter:?} is not a log filter ({error}); write a level \
                 (`info`) or per-target levels (`info,durable_mcp=debug`)"
            )));
        }
        #[cfg(feature = "logging")]
        WorkerLogFormat::read(source)?;
        Ok(WorkerSettings {
            server: ServerSettings::read(source)?,
            #[cfg(feature = "inspector")]
            inspector_token: settings::inspector_token(source)?,
        })
    }
}
