//! Validation of the two names users choose that end up in NATS subjects:
//! queue names and event names (docs/ARCHITECTURE.md, "Subjects and streams");
//! and of what any name may hold to be printed safely: no character that
//! would change a terminal's display of the text around it.

use std::borrow::Cow;

use thiserror::Error;

/// A user-chosen name that cannot be used in a subject.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NameError {
    /// A queue name outside `[a-z0-9_-]{1,64}`.
    #[error("invalid queue name '{0}': use 1-64 characters from a-z, 0-9, '_' and '-'")]
    Queue(String),
    /// An event name whose dot-separated tokens are not all `[a-z0-9_-]{1,64}`.
    #[error(
        "invalid event name '{0}': use dot-separated tokens of 1-64 characters from a-z, 0-9, '_' and '-'"
    )]
    Event(String),
    /// An event name whose first token is a number, which its subject
    /// would read as a project id (`dj.event.<project>.<name>`).
    #[error(
        "invalid event name '{0}': the first token may not be a number, which would read as a \
         project id in the subject dj.event.<project>.<name> (write e.g. 'day{0}')"
    )]
    EventNumber(String),
}

/// Whether `c` changes how a terminal or an editor shows the text around
/// it: a control character (a newline, the start of an escape sequence) or
/// a bidirectional override. No name may hold one.
pub fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with each [`is_unprintable`] character written as its escape
/// (`\n`, `\u{1b}`) and the rest as it is, Chinese names included: for names
/// and paths printed to a terminal, which may predate the rule or come from
/// a file system.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unprintable) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if is_unprintable(c) {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

fn is_token(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Checks a queue (worker group) name.
pub fn validate_queue(name: &str) -> Result<(), NameError> {
    if is_token(name) {
        Ok(())
    } else {
        Err(NameError::Queue(name.to_owned()))
    }
}

/// Whether `name` is one or more `[a-z0-9_-]{1,64}` tokens joined by dots:
/// a subject's tail (event and dataset names).
pub fn is_dotted_tokens(name: &str) -> bool {
    name.split('.').all(is_token)
}

/// Checks an event name: one or more tokens joined by dots, the first not
/// a number (see [`crate::subjects::Namespace::event`]).
pub fn validate_event(name: &str) -> Result<(), NameError> {
    if !is_dotted_tokens(name) {
        return Err(NameError::Event(name.to_owned()));
    }
    if name
        .split('.')
        .next()
        .is_some_and(|first| first.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(NameError::EventNumber(name.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprintable_characters_are_escaped() {
        assert_eq!(printable("夜间 etl"), "夜间 etl");
        assert_eq!(
            printable("a\nDataJump is up.\x1b[2J"),
            "a\\nDataJump is up.\\u{1b}[2J"
        );
        assert_eq!(printable("x\u{202e}y"), "x\\u{202e}y");
        assert!(!"夜间-etl_1".chars().any(is_unprintable));
    }

    #[test]
    fn queue_names() {
        assert!(validate_queue("etl").is_ok());
        assert!(validate_queue("ml_gpu-2").is_ok());
        for bad in ["", "ETL", "a.b", "a b", "a*", ">", &"x".repeat(65)] {
            assert!(validate_queue(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn event_names() {
        assert!(validate_event("orders.ready").is_ok());
        assert!(validate_event("day2024.ready").is_ok());
        for bad in ["", "a..b", ".a", "a.", "a.*", "a.>", "A", "7", "2024.ready"] {
            assert!(validate_event(bad).is_err(), "{bad:?} accepted");
        }
    }
}
