//! A log filter in `RUST_LOG`'s syntax without span filters: a level, and levels per target.
//! The Cloudflare host filters its console log with it (a Worker has no `EnvFilter`, whose
//! regular expressions would weigh on its script).

use tracing::Level;
use tracing::level_filters::LevelFilter;

/// The level of every target no directive names, unless the filter sets another: warnings and
/// errors. A Worker pays for each console write (in latency under `wrangler dev`, per event in
/// Workers Logs), so the engine's per-task `info` events are written only when asked for.
pub(crate) const DEFAULT_LEVEL: LevelFilter = LevelFilter::WARN;

/// The most detailed level shown for each target: the longest matching directive's, else the
/// default's.
#[derive(Debug)]
pub(crate) struct Filter {
    default: LevelFilter,
    /// `(target, level)`, longest target first.
    targets: Vec<(String, LevelFilter)>,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            default: DEFAULT_LEVEL,
            targets: Vec::new(),
        }
    }
}

impl Filter {
    /// Reads `info`, `durable_mcp=debug`, or a comma-separated list of them.
    pub(crate) fn parse(text: &str) -> Result<Filter, String> {
        let mut filter = Filter::default();
        for directive in text.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            let level = |name: &str| {
                name.parse::<LevelFilter>().map_err(|_| {
                    format!("{name:?} is not a level: use off, error, warn, info, debug or trace")
                })
            };
            match directive.split_once('=') {
                Some((target, name)) if !target.is_empty() => {
                    filter.targets.push((target.to_owned(), level(name)?));
                }
                Some(_) => return Err(format!("{directive:?} names no target")),
                None => filter.default = level(directive)?,
            }
        }
        filter
            .targets
            .sort_by_key(|(target, _)| std::cmp::Reverse(target.len()));
        Ok(filter)
    }

    fn level_for(&self, target: &str) -> LevelFilter {
        self.targets
            .iter()
            .find(|(prefix, _)| {
                target == prefix
                    || target
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with("::"))
            })
            .map_or(self.default, |(_, level)| *level)
    }

    /// Whether an event or span of `level` and `target` passes.
    pub(crate) fn enabled(&self, level: Level, target: &str) -> bool {
        level <= self.level_for(target)
    }

    pub(crate) fn most_detailed(&self) -> LevelFilter {
        self.targets
            .iter()
            .map(|(_, level)| *level)
            .fold(self.default, LevelFilter::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_takes_a_level_and_levels_per_target() {
        let filter = Filter::parse("warn, durable_mcp=debug ,durable_mcp::core=error").unwrap();
        assert_eq!(filter.level_for("app"), LevelFilter::WARN);
        assert_eq!(filter.level_for("durable_mcp"), LevelFilter::DEBUG);
        assert_eq!(filter.level_for("durable_mcp::rpc"), LevelFilter::DEBUG);
        assert_eq!(
            filter.level_for("durable_mcp::core::tick"),
            LevelFilter::ERROR
        );
        assert_eq!(filter.level_for("durable_mcpx"), LevelFilter::WARN);
        assert_eq!(filter.most_detailed(), LevelFilter::DEBUG);
        assert!(filter.enabled(Level::DEBUG, "durable_mcp"));
        assert!(!filter.enabled(Level::TRACE, "durable_mcp"));
        assert!(!filter.enabled(Level::INFO, "app"));
        assert!(filter.enabled(Level::ERROR, "app"));
        for bad in ["loud", "=info", "durable_mcp=often"] {
            assert!(Filter::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unset_it_lets_through_warnings_and_errors_only() {
        for filter in [Filter::default(), Filter::parse("").unwrap()] {
            assert!(filter.enabled(Level::ERROR, "durable_mcp"));
            assert!(filter.enabled(Level::WARN, "app"));
            assert!(!filter.enabled(Level::INFO, "durable_mcp"));
            assert_eq!(filter.most_detailed(), LevelFilter::WARN);
        }
        // A target named on its own keeps the default for the others.
        let filter = Filter::parse("durable_mcp=info").unwrap();
        assert!(filter.enabled(Level::INFO, "durable_mcp"));
        assert!(!filter.enabled(Level::INFO, "app"));
    }
}
