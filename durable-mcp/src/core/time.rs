//! Points in time and the duration grammar.
//!
//! The core never reads a clock: every function that needs "now" takes a [`Timestamp`].

use std::fmt;
use std::time::Duration;

/// Milliseconds since the Unix epoch. Passed in by the host's clock, never read here.
///
/// Times run from the epoch to [`Timestamp::MAX`]: [`Timestamp::from_millis`] and the
/// arithmetic saturate there, so a sleep, timeout or retention "forever" ends at the latest
/// time every host can store and schedule rather than at one some host cannot read back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub u64);

/// The longest duration durable-mcp keeps: from the epoch to [`Timestamp::MAX`], 100,000,000
/// days. Longer durations are refused by [`parse_duration`] (and by the macros, at the
/// literal), and a stored retention or poll interval is capped to it.
pub const MAX_DURATION: Duration = Duration::from_millis(Timestamp::MAX.0);

impl Timestamp {
    /// The latest time: 8,640,000,000,000,000 ms (100,000,000 days) after the epoch, on
    /// 13 September 275760, JavaScript's `Date` maximum.
    ///
    /// Every host can store it (it is below 2^53, the largest integer a Durable Object's
    /// SQLite reads back exactly) and schedule it (an alarm is a `Date`).
    pub const MAX: Timestamp = Timestamp(8_640_000_000_000_000);

    /// The timestamp `millis` milliseconds after the epoch, at most [`Timestamp::MAX`].
    pub const fn from_millis(millis: u64) -> Self {
        if millis > Self::MAX.0 {
            Self::MAX
        } else {
            Timestamp(millis)
        }
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// This point plus `duration`, saturating at [`Timestamp::MAX`].
    pub fn saturating_add(self, duration: Duration) -> Self {
        Timestamp::from_millis(self.0.saturating_add(duration_millis(duration)))
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl Timestamp {
    /// The ISO 8601 / RFC 3339 form in UTC with milliseconds, as the MCP wire writes times
    /// (`2026-11-29T07:22:39.328Z`).
    pub fn to_rfc3339(self) -> String {
        let millis = self.0 % 1000;
        let seconds = self.0 / 1000;
        let (day, second_of_day) = (seconds / 86_400, seconds % 86_400);
        let (year, month, day_of_month) = civil_from_days(day);
        format!(
            "{year:04}-{month:02}-{day_of_month:02}T{:02}:{:02}:{:02}.{millis:03}Z",
            second_of_day / 3600,
            second_of_day / 60 % 60,
            second_of_day % 60,
        )
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, restricted to days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// A duration in whole milliseconds, saturating at `u64::MAX`.
pub fn duration_millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `duration`, at most [`MAX_DURATION`]: what a stored duration (a retention, a poll interval)
/// is capped to.
pub fn cap_duration(duration: Duration) -> Duration {
    duration.min(MAX_DURATION)
}

/// Why a duration string was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: {reason}; write a number followed by ms, s, m, h or d \
     (\"250ms\", \"30s\", \"5m\", \"1h\", \"2d\") or plain milliseconds (\"1500\")"
)]
pub struct DurationError {
    /// The text that was given.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Parses the one duration grammar of durable-mcp.
///
/// A duration is a non-negative decimal number followed by a unit (`ms`, `s`, `m`, `h`, `d`), or
/// a plain integer of milliseconds. Fractions are rounded to the nearest millisecond
/// (`"1.5s"` is 1500 ms, `"0.4ms"` is 0 ms). Durations longer than [`MAX_DURATION`]
/// (`"100000000d"`) are refused. The macros check duration literals with the same grammar at
/// compile time.
///
/// ```
/// use durable_mcp::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
/// assert_eq!(parse_duration("1500"), Ok(Duration::from_millis(1500)));
/// assert!(parse_duration("5 minutes").is_err());
/// ```
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let error = |reason| DurationError {
        input: input.to_owned(),
        reason,
    };
    let digits_end = input
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(input.len());
    let (number, unit) = input.split_at(digits_end);
    if number.is_empty() {
        return Err(error("it does not start with a number"));
    }
    let unit_millis: u64 = match unit {
        "" if number.contains('.') => return Err(error("plain milliseconds must be an integer")),
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(error("the unit is not one of ms, s, m, h, d")),
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number, ""),
    };
    if whole.is_empty() || fraction.contains('.') || (number.contains('.') && fraction.is_empty()) {
        return Err(error("the number is malformed"));
    }
    let too_large = || error("it is too large");
    let whole: u64 = whole.parse().map_err(|_| too_large())?;
    let mut millis = whole.checked_mul(unit_millis).ok_or_else(too_large)?;
    if !fraction.is_empty() {
        // Exact decimal arithmetic on at most 9 fractional digits, rounded half up.
        let digits = &fraction[..fraction.len().min(9)];
        let scale = 10u128.pow(digits.len() as u32);
        let numerator = digits.parse::<u128>().map_err(|_| too_large())? * u128::from(unit_millis);
        let rounded = (numerator * 2 + scale) / (scale * 2);
        millis = millis
            .checked_add(u64::try_from(rounded).map_err(|_| too_large())?)
            .ok_or_else(too_large)?;
    }
    if millis > Timestamp::MAX.0 {
        return Err(error(
            "it is longer than 100000000d (8640000000000000ms), the latest time every host can \
             store and schedule (JavaScript's Date maximum)",
        ));
    }
    Ok(Duration::from_millis(millis))
}

/// Formats a duration in the grammar [`parse_duration`] reads, with the largest exact unit.
pub fn format_duration(duration: Duration) -> String {
    let millis = duration_millis(duration);
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if millis != 0 && millis.is_multiple_of(size) {
            return format!("{}{unit}", millis / size);
        }
    }
    format!("{millis}ms")
}

// Timestamps cross hosts as plain milliseconds.
impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u64::deserialize(deserializer).map(Timestamp::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_in_utc() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_767_225_600_000, "2026-01-01T00:00:00.000Z"),
            (1_795_936_959_328, "2026-11-29T07:22:39.328Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
        ];
        for (millis, expected) in cases {
            assert_eq!(Timestamp(millis).to_rfc3339(), expected, "{millis}");
        }
    }

    /// JavaScript's `Date` maximum, in milliseconds since the epoch.
    const LATEST: u64 = 8_640_000_000_000_000;

    #[test]
    fn arithmetic_stops_at_the_latest_time_every_host_holds() {
        assert_eq!(Timestamp::MAX, Timestamp(LATEST));
        assert_eq!(MAX_DURATION, Duration::from_millis(LATEST));
        assert_eq!(Timestamp::MAX.to_rfc3339(), "275760-09-13T00:00:00.000Z");
        const { assert!(LATEST < 1 << 53, "a Durable Object reads it back") };
        assert_eq!(cap_duration(Duration::MAX), MAX_DURATION);
        assert_eq!(cap_duration(Duration::from_secs(5)), Duration::from_secs(5));
        assert_eq!(
            Timestamp(0).saturating_add(Duration::MAX),
            Timestamp(LATEST)
        );
        assert_eq!(
            Timestamp(LATEST - 5).saturating_add(Duration::from_millis(10)),
            Timestamp(LATEST)
        );
        assert_eq!(
            Timestamp(LATEST).saturating_add(Duration::ZERO),
            Timestamp(LATEST)
        );
        assert_eq!(
            Timestamp(1_000).saturating_add(Duration::from_millis(10)),
            Timestamp(1_010)
        );
        assert_eq!(Timestamp::from_millis(u64::MAX), Timestamp(LATEST));
        assert_eq!(
            Timestamp(LATEST).saturating_since(Timestamp(0)),
            Duration::from_millis(LATEST)
        );
    }

    #[test]
    fn formats_round_trip() {
        for millis in [0, 1, 999, 1_000, 90_000, 3_600_000, 86_400_000, 86_400_001] {
            let duration = Duration::from_millis(millis);
            assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }
    }

    #[test]
    fn error_message_says_how_to_fix() {
        let message = parse_duration("5 minutes").unwrap_err().to_string();
        assert!(message.contains("\"5 minutes\""), "{message}");
        assert!(message.contains("\"30s\""), "{message}");
    }
}
