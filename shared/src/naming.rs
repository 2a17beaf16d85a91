//! Validation of the two names users choose that end up in NATS subjects:
//! queue names and event names (docs/ARCHITECTURE.md, "Subjects and streams");
//! and of what any name may hold to be printed safely: no character that
//! would change a terminal's display of the text around it. The bounds of
//! the names a DAG file gives are here too, each the size of the column
//! that stores it, in characters as PostgreSQL counts them (SQLite does not
//! enforce sizes; docs/SECURITY.md, "Sizes and dates").

use std::borrow::Cow;

use thiserror::Error;

/// Most characters of a DAG, task or schedule name, and of either part of
/// an `other_dag/task` dependency or an `after:` DAG: the columns
/// `dag.name`, `task.name`, `schedule.name`, `schedule.after_dag`,
/// `task_dependency.parent_dag` and `parent_task` are `varchar(128)`.
pub const MAX_NAME_CHARS: usize = 128;

/// Most characters of a DAG's `owner`: `dag.owner` is `varchar(64)`.
pub const MAX_OWNER_CHARS: usize = 64;

/// Most characters of a cron expression: `schedule.cron_expr` is
/// `varchar(128)`.
pub const MAX_CRON_CHARS: usize = 128;

/// Most characters of an event or dataset name, dots included:
/// `dataset_event.dataset` is `varchar(255)` (`schedule.event_name` 256).
pub const MAX_EVENT_CHARS: usize = 255;

/// Whether `text` is at most `max` characters (not bytes: `夜间汇总` is 4).
pub fn fits(text: &str, max: usize) -> bool {
    // A string of `max` bytes or fewer has `max` characters or fewer.
    text.len() <= max || text.chars().count() <= max
}

/// A user-chosen name that cannot be used in a subject.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NameError {
    /// A queue name outside `[a-z0-9_-]{1,64}`.
    #[error("invalid queue name '{0}': use 1-64 characters from a-z, 0-9, '_' and '-'")]
    Queue(String),
    /// An event name whose dot-separated tokens are not all `[a-z0-9_-]{1,64}`.
    #[error(
        "invalid event name '{}': use dot-separated tokens of 1-64 characters from a-z, 0-9, '_' and '-', at most {MAX_EVENT_CHARS} characters in all",
        shortened(.0)
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
    escaped(text, is_unprintable)
}

/// `text` as [`printable`] writes it, but with its line breaks (`\n`) and
/// tabs kept: for text of many lines from outside, such as a task's log,
/// printed to a terminal, where an escape sequence or a carriage return
/// could otherwise rewrite what is shown (docs/SECURITY.md, "Names in a
/// terminal").
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escaped(text, |c| is_unprintable(c) && !matches!(c, '\n' | '\t'))
}

/// `text` with each character `escape` picks written as its escape.
fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escape) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if escape(c) {
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

/// `text` as an error quotes it: its first 64 characters, then `…` when
/// there were more, so an overlong name does not fill the answer.
pub fn shortened(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(64) {
        None => Cow::Borrowed(text),
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
    }
}

/// Whether `name` is one or more `[a-z0-9_-]{1,64}` tokens joined by dots:
/// a subject's tail (event and dataset names).
pub fn is_dotted_tokens(name: &str) -> bool {
    name.split('.').all(is_token)
}

/// Checks an event name: one or more tokens joined by dots, at most
/// [`MAX_EVENT_CHARS`] in all, the first not a number (see
/// [`crate::subjects::Namespace::event`]).
pub fn validate_event(name: &str) -> Result<(), NameError> {
    if name.len() > MAX_EVENT_CHARS || !is_dotted_tokens(name) {
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
    fn log_text_keeps_its_lines_and_tabs() {
        assert_eq!(printable_lines("a\tb\nc\n"), "a\tb\nc\n");
        assert_eq!(
            printable_lines("ok\x1b]0;pwned\x07\rfake\n"),
            "ok\\u{1b}]0;pwned\\u{7}\\rfake\n"
        );
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
        // 255 characters in all fit the column; 256 do not.
        let long = |last: usize| {
            [
                "a".repeat(64),
                "b".repeat(64),
                "c".repeat(64),
                "d".repeat(last),
            ]
            .join(".")
        };
        assert_eq!(long(60).len(), 255);
        assert!(validate_event(&long(60)).is_ok());
        let err = validate_event(&long(61)).unwrap_err().to_string();
        assert!(err.contains("at most 255 characters in all"), "{err}");
        assert!(err.len() < 300, "the name is shortened in the error: {err}");
    }

    #[test]
    fn sizes_count_characters() {
        assert!(fits(&"夜".repeat(128), 128));
        assert!(!fits(&"夜".repeat(129), 128));
        assert!(fits("", 0));
    }
}
