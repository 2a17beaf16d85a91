//! Durations as a DAG file writes them: whole seconds (`90`) or a string
//! of spans (`30m`, `2h`, `1h30m`, `1d`), parsed by `humantime`. Stored and
//! serialized as seconds, so a file read back (what `dag apply` sends to
//! the API) says the same thing in numbers.

use serde::{Deserialize, Deserializer, de};

/// What a duration field takes, for error messages.
const EXPECTED: &str =
    "a duration: whole seconds (90) or a string such as \"30m\", \"2h\", \"1h30m\", \"1d\"";

/// A duration as written: whole seconds (`90`) or a string of spans
/// (`"30m"`, `"2h"`, `"1h30m"`, `"1d"`).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum Written {
    Seconds(i64),
    Text(String),
}

/// Parses a duration string into whole seconds: digits alone are seconds.
pub fn parse_seconds(text: &str) -> Result<i32, String> {
    let text = text.trim();
    let secs = match text.parse::<i64>() {
        Ok(secs) => secs,
        Err(_) => {
            let duration = humantime::parse_duration(text)
                .map_err(|e| format!("{text:?}: {e}; {EXPECTED}"))?;
            if duration.subsec_nanos() != 0 {
                return Err(format!("{text:?} is not a whole number of seconds"));
            }
            i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
        }
    };
    i32::try_from(secs)
        .map_err(|_| format!("{text:?} is out of range (at most {} seconds)", i32::MAX))
}

/// Seconds as a person reads them: `90` → `1m 30s`, `3600` → `1h`.
pub fn describe(secs: i64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(secs.max(0).unsigned_abs()))
        .to_string()
}

fn seconds_of<E: de::Error>(written: Written) -> Result<i32, E> {
    match written {
        Written::Seconds(secs) => i32::try_from(secs)
            .map_err(|_| E::custom(format!("{secs} is out of range; {EXPECTED}"))),
        Written::Text(text) => parse_seconds(&text).map_err(E::custom),
    }
}

/// `#[serde(deserialize_with = "duration::seconds")]` for an `i32` of seconds.
pub fn seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    let written = Written::deserialize(deserializer).map_err(|_| de::Error::custom(EXPECTED))?;
    seconds_of(written)
}

/// As [`seconds`], for an optional field (`null` or absent: `None`).
pub fn optional_seconds<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i32>, D::Error> {
    let written =
        Option::<Written>::deserialize(deserializer).map_err(|_| de::Error::custom(EXPECTED))?;
    written.map(seconds_of).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "seconds")]
        timeout: i32,
        #[serde(default, deserialize_with = "optional_seconds")]
        queue_timeout: Option<i32>,
    }

    fn read(yaml: &str) -> Result<Holder, String> {
        serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn seconds_or_spans() {
        assert_eq!(read("timeout: 90").unwrap().timeout, 90);
        assert_eq!(read("timeout: '90'").unwrap().timeout, 90);
        assert_eq!(read("timeout: 30m").unwrap().timeout, 1800);
        assert_eq!(read("timeout: 1h30m").unwrap().timeout, 5400);
        assert_eq!(read("timeout: 1h 30m").unwrap().timeout, 5400);
        assert_eq!(read("timeout: 1d").unwrap().timeout, 86_400);
        let both = read("timeout: 0\nqueue_timeout: 10m").unwrap();
        assert_eq!(both.queue_timeout, Some(600));
        assert_eq!(read("timeout: 0").unwrap().queue_timeout, None);
        assert_eq!(
            read("timeout: 0\nqueue_timeout: null")
                .unwrap()
                .queue_timeout,
            None
        );
    }

    #[test]
    fn described_as_spans() {
        assert_eq!(describe(90), "1m 30s");
        assert_eq!(describe(3600), "1h");
        assert_eq!(describe(0), "0s");
    }

    #[test]
    fn a_bad_duration_says_what_is_taken() {
        for bad in [
            "timeout: soon",
            "timeout: 1.5",
            "timeout: 500ms",
            "timeout: 99999999999",
        ] {
            let err = read(bad).unwrap_err();
            assert!(
                err.contains("30m") || err.contains("whole number") || err.contains("out of range"),
                "{bad}: {err}"
            );
        }
    }
}
