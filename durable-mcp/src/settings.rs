//! The hosts' settings: one name each, read by one reader with one policy on both hosts.
//!
//! The native host reads them from its process environment (`NativeHost::from_env`); a
//! Worker from its variables and secrets (`[vars]` in wrangler.toml, `wrangler secret put`).
//! A value that is set but unusable stops the host before it serves anyone, with a message
//! naming the setting and saying how to fix it: the native host does not start, a Worker
//! answers every request to its endpoint with that message. An unset setting keeps its default.
//!
//! | Setting | Hosts | Value |
//! |---------|-------|-------|
//! | [`ISSUER_VAR`], [`RESOURCE_VAR`], [`SCOPES_VAR`] | both | MCP authorization (see `auth::OAuth`; the `oauth` feature) |
//! | [`CORS_ORIGINS_VAR`] | both | origins whose pages may call the endpoint |
//! | [`INLINE_DEADLINE_VAR`] | both | how long an optional task's call waits inline |
//! | [`INSPECTOR_TOKEN_VAR`] | both | the task inspector's token (off without it) |
//! | [`LOG_FILTER_VAR`] | both | the log filter (the `logging` feature) |
//! | [`LOG_FORMAT_VAR`] | both | natively `compact` or `json`, on a Worker `object` or `json` (the `logging` feature) |
//! | `PORT`, `DURABLE_MCP_DATA` | native | the port, the state directory |
//! | [`WORKERS_VAR`], [`MAX_ACTIVATIONS_VAR`], [`MAX_WAITING_VAR`] | native | threads and queue bounds |
//! | [`MAX_CONNECTIONS_VAR`], [`MAX_STREAMS_VAR`] | native | open connections, and listen streams among them |
//! | [`ALLOWED_HOSTS_VAR`] | Cloudflare | the Worker's custom domains |
//! | `DURABLE_MCP_HAND_OFF`, `DURABLE_MCP_LEASE` | Cloudflare | the TaskRunner's activation bounds |

use std::time::Duration;

#[cfg(feature = "oauth")]
use crate::auth::OAuth;
use crate::core::parse_duration;
use crate::rpc::McpServer;

/// The trusted authorization servers (issuer URLs, separated by commas).
pub const ISSUER_VAR: &str = "DURABLE_MCP_OAUTH_ISSUER";

/// The endpoint's canonical URL (`https://mcp.example.com/mcp`): the audience tokens must be
/// issued for.
pub const RESOURCE_VAR: &str = "DURABLE_MCP_OAUTH_RESOURCE";

/// Scopes every request needs (separated by spaces or commas). Optional.
pub const SCOPES_VAR: &str = "DURABLE_MCP_OAUTH_SCOPES";

/// The origins whose web pages may call the endpoint (separated by commas or spaces, as
/// [`McpServer::allow_origins`] takes them).
pub const CORS_ORIGINS_VAR: &str = "DURABLE_MCP_CORS_ORIGINS";

/// How long an optional task tool's call waits inline ([`McpServer::inline_deadline`]): a
/// duration such as `90s` or `10m`.
pub const INLINE_DEADLINE_VAR: &str = "DURABLE_MCP_INLINE_DEADLINE";

/// The task inspector's token: with it set, the host serves the inspector at
/// [`INSPECTOR_PATH`](crate::http::INSPECTOR_PATH) to requests that carry it (and a Worker its wake
/// path). At least 16 printable characters.
pub const INSPECTOR_TOKEN_VAR: &str = "DURABLE_MCP_INSPECTOR_TOKEN";

/// The log filter: a level (`info`) or per-target levels (`info,durable_mcp=debug`).
pub const LOG_FILTER_VAR: &str = "RUST_LOG";

/// The log format. Natively `compact` (the default: one line per event, coloured on a
/// terminal) or `json` (one JSON object per line, for a log collector); on a Worker `object`
/// (the default: each event a console object, its fields indexed by Workers Logs) or `json`
/// (each event the same object as one line of JSON text, which `wrangler dev` prints on one
/// line).
pub const LOG_FORMAT_VAR: &str = "DURABLE_MCP_LOG_FORMAT";

/// The native host's number of worker threads.
pub const WORKERS_VAR: &str = "DURABLE_MCP_WORKERS";

/// How many task activations the native host runs at once.
pub const MAX_ACTIVATIONS_VAR: &str = "DURABLE_MCP_MAX_ACTIVATIONS";

/// How many due tasks may wait for an activation on the native host before new ones are
/// refused.
pub const MAX_WAITING_VAR: &str = "DURABLE_MCP_MAX_WAITING";

/// How many `subscriptions/listen` streams the native host holds open at once, at most half
/// its connections (a Worker holds 1,024 per isolate).
pub const MAX_STREAMS_VAR: &str = "DURABLE_MCP_MAX_STREAMS";

/// How many connections the native host holds open at once.
pub const MAX_CONNECTIONS_VAR: &str = "DURABLE_MCP_MAX_CONNECTIONS";

/// The hosts a Worker answers besides loopback and its `workers.dev` names (which need no
/// setting): its custom domains, such as `mcp.example.com`, separated by commas or spaces
/// (`*` allows any). Requests whose `Host` or `Origin` names another host get HTTP 403, as on
/// the native host.
pub const ALLOWED_HOSTS_VAR: &str = "DURABLE_MCP_ALLOWED_HOSTS";

/// The native host's port.
#[cfg_attr(not(native_host), allow(dead_code))]
pub(crate) const PORT_VAR: &str = "PORT";

/// The native host's state directory.
#[cfg_attr(not(native_host), allow(dead_code))]
pub(crate) const DATA_DIR_VAR: &str = "DURABLE_MCP_DATA";

/// How long a TaskRunner's activation may run before it hands off to a fresh alarm.
#[cfg_attr(not(cloudflare_host), allow(dead_code))]
pub(crate) const HAND_OFF_VAR: &str = "DURABLE_MCP_HAND_OFF";

/// How long after an activation starts a TaskRunner runs its task again if that activation
/// died with its isolate.
#[cfg_attr(not(cloudflare_host), allow(dead_code))]
pub(crate) const LEASE_VAR: &str = "DURABLE_MCP_LEASE";

/// The name a Worker read the inspector's token from before it took
/// [`INSPECTOR_TOKEN_VAR`], still read (with a warning) for one release.
const OLD_INSPECTOR_TOKEN_VAR: &str = "DURABLE_MCP_ADMIN_TOKEN";

/// The names the inspector's token is read under: a build without the inspector refuses both.
#[cfg(not(feature = "inspector"))]
#[cfg_attr(not(any_host), allow(dead_code))]
pub(crate) const INSPECTOR_TOKEN_VARS: [&str; 2] = [INSPECTOR_TOKEN_VAR, OLD_INSPECTOR_TOKEN_VAR];

/// The shortest inspector token a host takes: it guards every task's data.
#[cfg(feature = "inspector")]
const MIN_INSPECTOR_TOKEN: usize = 16;

/// Where a host reads its settings from.
pub(crate) trait Source {
    /// The value of the setting `name`, if it is set.
    fn get(&self, name: &str) -> Option<String>;
}

/// The native host's settings: its process environment.
#[cfg_attr(not(native_host), allow(dead_code))]
pub(crate) struct ProcessEnv;

impl Source for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// A setting that is set but unusable: the message names it and says how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SettingError(pub(crate) String);

/// A duration setting (`90s`, `10m`, ...), longer than zero.
#[cfg_attr(not(any_host), allow(dead_code))]
pub(crate) fn duration(source: &dyn Source, name: &str) -> Result<Option<Duration>, SettingError> {
    let Some(text) = source.get(name) else {
        return Ok(None);
    };
    match parse_duration(text.trim()) {
        Ok(duration) if !duration.is_zero() => Ok(Some(duration)),
        Ok(_) => Err(SettingError(format!(
            "{name}={text:?} must be longer than zero; write a duration such as 90s or 10m"
        ))),
        Err(error) => Err(SettingError(format!(
            "{name}={text:?}: {error}; write a duration such as 90s or 10m"
        ))),
    }
}

/// A positive whole number setting.
#[cfg_attr(not(native_host), allow(dead_code))]
pub(crate) fn positive(source: &dyn Source, name: &str) -> Result<Option<usize>, SettingError> {
    let Some(text) = source.get(name) else {
        return Ok(None);
    };
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(SettingError(format!(
            "{name}={text:?} is not a positive whole number"
        ))),
    }
}

/// The inspector's token ([`INSPECTOR_TOKEN_VAR`], or its old name with a warning), checked.
#[cfg(feature = "inspector")]
#[cfg_attr(not(any_host), allow(dead_code))]
pub(crate) fn inspector_token(source: &dyn Source) -> Result<Option<String>, SettingError> {
    let token = match source.get(INSPECTOR_TOKEN_VAR) {
        Some(token) => token,
        None => match source.get(OLD_INSPECTOR_TOKEN_VAR) {
            Some(token) => {
                tracing::warn!(
                    target: crate::core::trace::TARGET,
                    "{OLD_INSPECTOR_TOKEN_VAR} is renamed {INSPECTOR_TOKEN_VAR}; the old name \
                     is read for one more release: rename the secret"
                );
                token
            }
            None => return Ok(None),
        },
    };
    check_inspector_token(&token).map(|()| Some(token))
}

/// Refuses an inspector token too short to guard every task's data, or with spaces or
/// control characters in it.
#[cfg(feature = "inspector")]
pub(crate) fn check_inspector_token(token: &str) -> Result<(), SettingError> {
    if token.chars().count() >= MIN_INSPECTOR_TOKEN
        && token.bytes().all(|byte| byte.is_ascii_graphic())
    {
        return Ok(());
    }
    Err(SettingError(format!(
        "the inspector token ({INSPECTOR_TOKEN_VAR}) must be at least {MIN_INSPECTOR_TOKEN} \
         printable ASCII characters without spaces; generate one with `openssl rand -hex 32`"
    )))
}

/// How a Worker writes each event to the console ([`LOG_FORMAT_VAR`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(not(all(cloudflare_host, feature = "logging")), allow(dead_code))]
pub(crate) enum WorkerLogFormat {
    /// `object`: a console object, whose fields Workers Logs indexes (`wrangler dev` prints it
    /// over several lines).
    #[default]
    Object,
    /// `json`: the same object as one line of JSON text.
    Json,
}

#[cfg_attr(not(all(cloudflare_host, feature = "logging")), allow(dead_code))]
impl WorkerLogFormat {
    /// The format in `source`: [`Object`](Self::Object) unless it says `json`.
    pub(crate) fn read(source: &dyn Source) -> Result<Self, SettingError> {
        let Some(text) = source.get(LOG_FORMAT_VAR) else {
            return Ok(WorkerLogFormat::Object);
        };
        match text.trim() {
            "" | "object" => Ok(WorkerLogFormat::Object),
            "json" => Ok(WorkerLogFormat::Json),
            _ => Err(SettingError(format!(
                "{LOG_FORMAT_VAR}={text:?} is not a Worker's log format; use `object` (the \
                 default) or `json` (one line of JSON per event)"
            ))),
        }
    }
}

/// What the settings both hosts share change on a server: authorization, browser origins and
/// the inline deadline. Read and checked once at start, applied to every server the host
/// builds (one per thread: an `OAuth` is not `Send`, so each is built from the settings).
#[derive(Clone, Debug, Default)]
pub(crate) struct ServerSettings {
    /// The issuers, the resource and the scopes, checked.
    #[cfg(feature = "oauth")]
    oauth: Option<[Option<String>; 3]>,
    origins: Option<String>,
    inline_deadline: Option<Duration>,
}

impl ServerSettings {
    /// The settings in `source`.
    #[cfg_attr(not(any_host), allow(dead_code))]
    pub(crate) fn read(source: &dyn Source) -> Result<Self, SettingError> {
        #[cfg(feature = "oauth")]
        let oauth = {
            let oauth = [ISSUER_VAR, RESOURCE_VAR, SCOPES_VAR].map(|name| source.get(name));
            let [issuers, resource, scopes] = oauth.clone();
            let checked =
                OAuth::from_host_settings(issuers, resource, scopes).map_err(SettingError)?;
            checked.map(|_| oauth)
        };
        #[cfg(not(feature = "oauth"))]
        refuse_without("oauth", source, &[ISSUER_VAR, RESOURCE_VAR, SCOPES_VAR])?;
        Ok(ServerSettings {
            #[cfg(feature = "oauth")]
            oauth,
            origins: source.get(CORS_ORIGINS_VAR),
            inline_deadline: duration(source, INLINE_DEADLINE_VAR)?,
        })
    }

    /// Whether any of them is set.
    #[cfg_attr(not(native_host), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        #[cfg(feature = "oauth")]
        if self.oauth.is_some() {
            return false;
        }
        self.origins.is_none() && self.inline_deadline.is_none()
    }

    /// `server` with the settings applied. A server with OAuth of its own keeps it.
    #[cfg_attr(not(any_host), allow(dead_code))]
    pub(crate) fn apply(&self, mut server: McpServer) -> McpServer {
        #[cfg(feature = "oauth")]
        if server.oauth_config().is_none()
            && let Some([issuers, resource, scopes]) = self.oauth.clone()
            && let Ok(Some(oauth)) = OAuth::from_host_settings(issuers, resource, scopes)
        {
            server = server.oauth(oauth);
        }
        if let Some(origins) = &self.origins {
            server = server.allow_origins(origins);
        }
        if let Some(deadline) = self.inline_deadline {
            server = server.inline_deadline(deadline);
        }
        server
    }
}

/// Refuses the settings among `names` that are set, in a build without `feature`, which they
/// need: a host told to do what it cannot must not serve as if it had not been told.
#[cfg(any(
    not(feature = "oauth"),
    not(feature = "logging"),
    not(feature = "inspector")
))]
#[cfg_attr(not(any_host), allow(dead_code))]
pub(crate) fn refuse_without(
    feature: &str,
    source: &dyn Source,
    names: &[&str],
) -> Result<(), SettingError> {
    let set: Vec<&str> = (names.iter().copied())
        .filter(|name| source.get(name).is_some())
        .collect();
    if set.is_empty() {
        return Ok(());
    }
    Err(SettingError(format!(
        "{} set, but this server was built without durable-mcp's `{feature}` feature, which it \
         needs; enable the feature (it is on by default: remove `default-features = false`, or \
         add \"{feature}\" to durable-mcp's features) or unset it",
        set.join(" and ")
    )))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    struct Map(HashMap<&'static str, &'static str>);

    impl Source for Map {
        fn get(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|value| (*value).to_owned())
        }
    }

    fn source(pairs: &[(&'static str, &'static str)]) -> Map {
        Map(pairs.iter().copied().collect())
    }

    #[test]
    fn an_unusable_value_names_the_setting_and_the_fix() {
        let bad = source(&[(INLINE_DEADLINE_VAR, "soon"), (WORKERS_VAR, "0")]);
        let error = ServerSettings::read(&bad).unwrap_err().0;
        assert!(error.starts_with(INLINE_DEADLINE_VAR), "{error}");
        assert!(error.contains("such as 90s"), "{error}");
        let zero = source(&[(HAND_OFF_VAR, "0s")]);
        let error = duration(&zero, HAND_OFF_VAR).unwrap_err().0;
        assert!(error.contains("longer than zero"), "{error}");
        let error = positive(&bad, WORKERS_VAR).unwrap_err().0;
        assert!(error.contains("positive whole number"), "{error}");
        let half = source(&[(ISSUER_VAR, "https://issuer.example")]);
        let error = ServerSettings::read(&half).unwrap_err().0;
        #[cfg(feature = "oauth")]
        assert!(error.contains(RESOURCE_VAR), "{error}");
        #[cfg(not(feature = "oauth"))]
        assert!(error.contains("`oauth` feature"), "{error}");
    }

    #[test]
    #[cfg(any(
        not(feature = "oauth"),
        not(feature = "logging"),
        not(feature = "inspector")
    ))]
    fn a_setting_a_left_out_feature_needs_stops_the_host_and_names_both() {
        let names = [LOG_FILTER_VAR, LOG_FORMAT_VAR];
        assert_eq!(refuse_without("logging", &source(&[]), &names), Ok(()));
        let set = source(&[(LOG_FORMAT_VAR, "json")]);
        let error = refuse_without("logging", &set, &names).unwrap_err().0;
        assert!(error.starts_with(LOG_FORMAT_VAR), "{error}");
        assert!(!error.contains(LOG_FILTER_VAR), "{error}");
        assert!(
            error.contains("without durable-mcp's `logging` feature"),
            "{error}"
        );
    }

    #[test]
    fn unset_settings_keep_the_defaults() {
        let empty = source(&[]);
        assert!(ServerSettings::read(&empty).unwrap().is_empty());
        assert_eq!(duration(&empty, LEASE_VAR), Ok(None));
        assert_eq!(positive(&empty, MAX_WAITING_VAR), Ok(None));
        #[cfg(feature = "inspector")]
        assert_eq!(inspector_token(&empty), Ok(None));
    }

    #[test]
    fn a_workers_log_format_is_object_or_json_and_nothing_else() {
        let format = |value| WorkerLogFormat::read(&source(&[(LOG_FORMAT_VAR, value)]));
        assert_eq!(
            WorkerLogFormat::read(&source(&[])),
            Ok(WorkerLogFormat::Object)
        );
        assert_eq!(format("object"), Ok(WorkerLogFormat::Object));
        assert_eq!(format(""), Ok(WorkerLogFormat::Object));
        assert_eq!(format("json"), Ok(WorkerLogFormat::Json));
        assert_eq!(format(" json "), Ok(WorkerLogFormat::Json));
        for other in ["compact", "JSON", "text"] {
            let error = format(other).unwrap_err().0;
            assert!(error.starts_with(LOG_FORMAT_VAR), "{error}");
            assert!(error.contains(&format!("{other:?}")), "{error}");
            assert!(
                error.contains("`object`") && error.contains("`json`"),
                "{error}"
            );
        }
    }

    #[test]
    #[cfg(feature = "inspector")]
    fn the_inspector_token_is_read_under_its_old_name_too_and_checked() {
        let token = "0123456789abcdef0123";
        let new = source(&[(INSPECTOR_TOKEN_VAR, token)]);
        assert_eq!(inspector_token(&new), Ok(Some(token.to_owned())));
        let old = source(&[(OLD_INSPECTOR_TOKEN_VAR, token)]);
        assert_eq!(inspector_token(&old), Ok(Some(token.to_owned())));
        let both = source(&[(INSPECTOR_TOKEN_VAR, token), (OLD_INSPECTOR_TOKEN_VAR, "x")]);
        assert_eq!(inspector_token(&both), Ok(Some(token.to_owned())));
        let short = source(&[(INSPECTOR_TOKEN_VAR, "dev-token")]);
        let error = inspector_token(&short).unwrap_err().0;
        assert!(error.contains("openssl rand"), "{error}");
    }
}
