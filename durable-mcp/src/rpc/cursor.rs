//! The `tasks/list` cursor: an opaque token for a [`ListPosition`].
//!
//! The token is the position, not an offset, so it stays valid while tasks are created: the
//! next page starts strictly after the task the previous page ended with. It is versioned
//! (`1:`) text in URL-safe base64, and carries nothing a client could not see in the page
//! itself (a creation time and a task id).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::error::RpcError;
use crate::core::{ListPosition, Timestamp};

/// The version tag every cursor starts with.
const VERSION: &str = "1";

/// The cursor that resumes a listing strictly after `position`.
pub fn encode_cursor(position: &ListPosition) -> String {
    let text = format!(
        "{VERSION}:{}:{}",
        position.created_at.as_millis(),
        position.task_id
    );
    URL_SAFE_NO_PAD.encode(text)
}

/// The position a cursor from [`encode_cursor`] stands for. Anything else is refused with
/// -32602, saying to start the listing again without a cursor.
pub fn decode_cursor(cursor: &str) -> Result<ListPosition, RpcError> {
    parse(cursor).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "Invalid params: the cursor {:?} is not one this server issued; pass the \
             nextCursor of the previous tasks/list page unchanged, or omit the cursor to \
             start from the first page",
            shorten(cursor)
        ))
    })
}

fn parse(cursor: &str) -> Option<ListPosition> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let mut parts = text.splitn(3, ':');
    if parts.next()? != VERSION {
        return None;
    }
    let created_at = parts.next()?;
    if created_at.is_empty() || !created_at.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let created_at: u64 = created_at.parse().ok()?;
    if created_at > Timestamp::MAX.as_millis() {
        return None;
    }
    let task_id = parts.next()?;
    if task_id.is_empty() {
        return None;
    }
    Some(ListPosition {
        created_at: Timestamp(created_at),
        task_id: task_id.to_owned(),
    })
}

/// At most the first 64 characters of `text`, to quote in a message.
fn shorten(text: &str) -> String {
    const LONGEST: usize = 64;
    match text.char_indices().nth(LONGEST) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::code;

    fn position(created_at: u64, task_id: &str) -> ListPosition {
        ListPosition {
            created_at: Timestamp(created_at),
            task_id: task_id.to_owned(),
        }
    }

    #[test]
    fn a_cursor_round_trips_its_position() {
        for position in [
            position(0, "a"),
            position(1_795_957_429_895, "0123456789abcdef0123456789abcdef"),
            position(Timestamp::MAX.as_millis(), "an id: with colons, ü and 🚀"),
        ] {
            let cursor = encode_cursor(&position);
            assert!(
                cursor
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{cursor}"
            );
            assert_eq!(decode_cursor(&cursor).unwrap(), position);
        }
    }

    #[test]
    fn a_garbled_cursor_is_invalid_params_with_a_way_out() {
        let forged = |text: &str| URL_SAFE_NO_PAD.encode(text);
        for cursor in [
            String::new(),
            "not base64 at all!".to_owned(),
            forged("2:10:abc"),
            forged("1:ten:abc"),
            forged("1:-1:abc"),
            forged("1:10:"),
            forged("1:10"),
            forged(&format!("1:{}:abc", u64::MAX)),
            URL_SAFE_NO_PAD.encode([0xff, 0xfe]),
            "x".repeat(500),
        ] {
            let error = decode_cursor(&cursor).expect_err(&cursor);
            assert_eq!(error.error.code, code::INVALID_PARAMS, "{cursor}");
            assert_eq!(error.status, 200);
            assert!(
                error.error.message.contains("omit the cursor"),
                "{}",
                error.error.message
            );
            assert!(
                error.error.message.len() < 300,
                "the cursor is quoted short"
            );
        }
    }
}
