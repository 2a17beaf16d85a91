//! Validation of the two names users choose that end up in NATS subjects:
//! queue names and event names (docs/ARCHITECTURE.md, "Subjects and streams").

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

/// Checks an event name: one or more tokens joined by dots.
pub fn validate_event(name: &str) -> Result<(), NameError> {
    if name.split('.').all(is_token) {
        Ok(())
    } else {
        Err(NameError::Event(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for bad in ["", "a..b", ".a", "a.", "a.*", "a.>", "A"] {
            assert!(validate_event(bad).is_err(), "{bad:?} accepted");
        }
    }
}
