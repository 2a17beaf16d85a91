//! Words for people with a stable code beside them: a problem the API
//! answers or a reason it stores carries its English text for scripts and
//! logs, and a [`Problem`] — a code such as `cron.out_of_range` and the
//! values the words name — from which a UI says it in its user's language
//! (docs/ARCHITECTURE.md, "Two languages"). The API itself does no
//! language negotiation.

use std::collections::BTreeMap;

use datajump_cron::CronError;
use serde::{Deserialize, Serialize};

/// What went wrong, as a code and the values its words name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Problem {
    /// Stable across versions: `cron.out_of_range`, `timezone.unknown`, …
    pub code: String,
    /// The values the words name (`{ "field": "minute", "value": "60",
    /// "min": "0", "max": "59" }`), as text.
    pub params: BTreeMap<String, String>,
}

impl Problem {
    /// `code` with `params`.
    pub fn new<'a>(code: &str, params: impl IntoIterator<Item = (&'a str, String)>) -> Problem {
        Problem {
            code: code.to_owned(),
            params: params
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
        }
    }
}

impl From<&CronError> for Problem {
    fn from(error: &CronError) -> Problem {
        Problem::new(error.code(), error.params())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cron_error_names_its_field_and_values() {
        let Err(error) = datajump_cron::CronExpr::parse("0 60 * * * ?") else {
            panic!("minute 60 parsed");
        };
        let problem = Problem::from(&error);
        assert_eq!(problem.code, "cron.out_of_range");
        let params: Vec<(&str, &str)> = problem
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            params,
            [
                ("expr", "0 60 * * * ?"),
                ("field", "minute"),
                ("max", "59"),
                ("min", "0"),
                ("value", "60"),
            ]
        );
        let zone = datajump_cron::parse_time_zone("Mars/Olympus").expect_err("no such zone");
        assert_eq!(Problem::from(&zone).code, "timezone.unknown");
        assert_eq!(Problem::from(&zone).params["name"], "Mars/Olympus");
    }
}
