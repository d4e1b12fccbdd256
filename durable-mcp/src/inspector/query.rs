//! The parameters of a task listing, read from the query string and checked.

use crate::core::{ListPosition, TaskRecord, TaskStatus, Timestamp, parse_duration};
use crate::rpc::cursor::decode_cursor;

/// The most tasks one page holds, and how many it holds unless asked.
pub(crate) const MAX_PAGE: usize = 100;
const DEFAULT_PAGE: usize = 50;

/// Which tasks a listing keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct TaskFilter {
    /// Only tasks in this status.
    pub status: Option<TaskStatus>,
    /// Only tasks of this tool.
    pub tool: Option<String>,
    /// Only tasks created at or before this time (`older_than`).
    pub created_by: Option<Timestamp>,
    /// Only tasks created at or after this time (`newer_than`).
    pub created_since: Option<Timestamp>,
}

impl TaskFilter {
    /// Whether the filter keeps `task`.
    pub fn keeps(&self, task: &TaskRecord) -> bool {
        self.status.is_none_or(|status| task.status == status)
            && self
                .tool
                .as_ref()
                .is_none_or(|tool| task.tool_name == *tool)
            && self.created_by.is_none_or(|at| task.created_at <= at)
            && self.created_since.is_none_or(|at| task.created_at >= at)
    }
}

/// A listing request: the filter, where the page starts, and its size.
#[derive(Debug)]
pub(crate) struct Listing {
    pub filter: TaskFilter,
    pub after: Option<ListPosition>,
    pub limit: usize,
}

/// Reads a listing's query string (`status=working&limit=20`), with ages counted back from
/// `now`. An unknown or repeated parameter, or a malformed value, is an error saying what to
/// send.
pub(crate) fn listing(query: &str, now: Timestamp) -> Result<Listing, String> {
    let mut listing = Listing {
        filter: TaskFilter::default(),
        after: None,
        limit: DEFAULT_PAGE,
    };
    let mut seen: Vec<String> = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (name, value) = (decode(name)?, decode(value)?);
        if seen.contains(&name) {
            return Err(format!(
                "the parameter {name:?} is given twice; give it once"
            ));
        }
        let filter = &mut listing.filter;
        match name.as_str() {
            "status" => {
                let status = TaskStatus::parse(&value).ok_or_else(|| {
                    format!(
                        "status={value:?} is not a task status; use working, input_required, \
                         completed, failed or cancelled"
                    )
                })?;
                filter.status = Some(status);
            }
            "tool" if value.is_empty() => return Err("tool= needs a tool name".to_owned()),
            "tool" => filter.tool = Some(value),
            "older_than" => filter.created_by = Some(ago(&name, &value, now)?),
            "newer_than" => filter.created_since = Some(ago(&name, &value, now)?),
            "limit" => {
                listing.limit = value
                    .parse()
                    .ok()
                    .filter(|limit| (1..=MAX_PAGE).contains(limit))
                    .ok_or_else(|| {
                        format!("limit={value:?} is not a page size; use 1 to {MAX_PAGE}")
                    })?;
            }
            "cursor" => {
                let position = decode_cursor(&value).map_err(|error| error.error.message)?;
                listing.after = Some(position);
            }
            _ => {
                return Err(format!(
                    "{name:?} is not a listing parameter; use status, tool, older_than, \
                     newer_than, limit or cursor"
                ));
            }
        }
        seen.push(name);
    }
    Ok(listing)
}

/// The time `value` (a duration such as `10m`) before `now`.
fn ago(name: &str, value: &str, now: Timestamp) -> Result<Timestamp, String> {
    let age = parse_duration(value).map_err(|error| {
        format!("{name}={value:?} is not a duration ({error}); write 30s, 10m, 2h or 1d")
    })?;
    Ok(Timestamp::from_millis(
        now.as_millis()
            .saturating_sub(crate::core::time::duration_millis(age)),
    ))
}

/// A query string component with its `%XX` escapes and `+` decoded.
fn decode(text: &str) -> Result<String, String> {
    let malformed = || format!("{text:?} is not a well-formed query string component");
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.bytes();
    while let Some(byte) = rest.next() {
        bytes.push(match byte {
            b'+' => b' ',
            b'%' => {
                let high = rest.next().and_then(|b| (b as char).to_digit(16));
                let low = rest.next().and_then(|b| (b as char).to_digit(16));
                match (high, low) {
                    (Some(high), Some(low)) => {
                        u8::try_from(high * 16 + low).map_err(|_| malformed())?
                    }
                    _ => return Err(malformed()),
                }
            }
            byte => byte,
        });
    }
    String::from_utf8(bytes).map_err(|_| malformed())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_000_000);

    #[test]
    fn a_query_sets_the_filter_page_and_size() {
        let listing = listing(
            "status=input_required&tool=report%20task&older_than=10s&limit=7",
            NOW,
        )
        .unwrap();
        assert_eq!(listing.filter.status, Some(TaskStatus::InputRequired));
        assert_eq!(listing.filter.tool.as_deref(), Some("report task"));
        assert_eq!(
            listing.filter.created_by,
            Some(Timestamp::from_millis(990_000))
        );
        assert_eq!(listing.limit, 7);
        assert!(listing.after.is_none());
        assert_eq!(super::listing("", NOW).unwrap().limit, DEFAULT_PAGE);
    }

    #[test]
    fn bad_parameters_are_refused_saying_what_to_send() {
        for (query, says) in [
            ("status=done", "use working"),
            ("limit=0", "use 1 to 100"),
            ("limit=101", "use 1 to 100"),
            ("older_than=soon", "not a duration"),
            ("cursor=xyz", "not one this server issued"),
            ("colour=red", "not a listing parameter"),
            ("tool=a&tool=b", "given twice"),
            ("tool=%zz", "well-formed"),
            ("tool=", "needs a tool name"),
        ] {
            let error = listing(query, NOW).unwrap_err();
            assert!(error.contains(says), "{query}: {error}");
        }
    }
}
