//! Datasets (docs/DAG_FORMAT.md "Datasets"): what a task declares it
//! writes (`outputs: [dw.orders/${bizdate}]`), what a data schedule waits
//! for (`on: { all: [dw.orders, dw.users] }`), and the event that says a
//! dataset, or one partition of it, was written.
//!
//! The shaping decision: **a dataset is a name, a partition is a string**.
//! DataJump does not look inside the data; it records who said what was
//! written and when, and a condition is met for one partition when each
//! dataset it needs has an event for that partition (or, for a dataset
//! written without partitions, an event since the schedule last fired).
//! Names follow the event-name rule because each is a subject token
//! sequence (`dj.dataset.<name>`); partitions never enter a subject.

use std::collections::BTreeSet;

use chrono::NaiveDate;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::naming;
use crate::params::{Mode, ParamContext, ParamError};

/// The longest partition, after substitution.
pub const MAX_PARTITION: usize = 128;

/// The largest metadata object an event may carry, in bytes of JSON.
pub const MAX_METADATA: usize = 4 * 1024;

/// The deepest nesting of `all` and `any` a condition may have.
const MAX_CONDITION_DEPTH: usize = 8;

/// Why a dataset reference, partition or condition is refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DatasetError {
    /// A name that is not dot-separated `[a-z0-9_-]` tokens.
    #[error("invalid dataset name '{}': use dot-separated tokens of 1-64 characters from a-z, 0-9, '_' and '-', at most {} characters in all, such as dw.orders", naming::printable(&naming::shortened(.0)), naming::MAX_EVENT_CHARS)]
    Name(String),
    /// An empty, over-long or unprintable partition.
    #[error("invalid partition '{}': use 1-{MAX_PARTITION} printable characters, such as 2024-01-15", naming::printable(.0))]
    Partition(String),
    /// An `all` or `any` with nothing in it.
    #[error("an 'all' or 'any' needs at least one dataset")]
    EmptyGroup,
    /// Groups nested too deep to be meant.
    #[error("a condition nests 'all' and 'any' more than {MAX_CONDITION_DEPTH} deep")]
    TooDeep,
    /// Metadata that is not a small JSON object.
    #[error(
        "metadata must be a JSON object of at most {MAX_METADATA} bytes, without NUL characters"
    )]
    Metadata,
    /// A partition template that cannot be substituted.
    #[error("'{dataset}': {source}")]
    Template {
        /// The dataset whose partition it is.
        dataset: String,
        /// Why.
        source: ParamError,
    },
}

/// Checks a dataset name.
pub fn validate_name(name: &str) -> Result<(), DatasetError> {
    if naming::is_dotted_tokens(name) {
        Ok(())
    } else {
        Err(DatasetError::Name(name.to_owned()))
    }
}

/// Checks a partition as it is recorded (after substitution).
pub fn validate_partition(partition: &str) -> Result<(), DatasetError> {
    let fits = (1..=MAX_PARTITION).contains(&partition.len())
        && !partition.chars().any(naming::is_unprintable)
        && partition.trim() == partition;
    if fits {
        Ok(())
    } else {
        Err(DatasetError::Partition(partition.to_owned()))
    }
}

/// Checks an event's metadata: absent, or a JSON object small enough to
/// keep with every event.
pub fn validate_metadata(metadata: Option<&serde_json::Value>) -> Result<(), DatasetError> {
    match metadata {
        None => Ok(()),
        Some(value @ serde_json::Value::Object(_)) => {
            let text = value.to_string();
            // JSON text writes a NUL as `\u0000`, which no database stores.
            if text.len() <= MAX_METADATA && !text.contains("\\u0000") {
                Ok(())
            } else {
                Err(DatasetError::Metadata)
            }
        }
        Some(_) => Err(DatasetError::Metadata),
    }
}

/// What an announcement says, from the API's body or a producer's message
/// on `dj.dataset.<name>`: untrusted input, checked whole by
/// [`Announced::parse`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Announced {
    /// The project (default: the caller's token's, or the default one).
    pub project: Option<i64>,
    /// The partition written (`2024-01-15`), for a partitioned dataset.
    pub partition: Option<String>,
    /// Small facts about what was written: a JSON object of at most 4 KiB.
    pub metadata: Option<serde_json::Value>,
}

/// Why an announcement is refused.
#[derive(Debug, Error)]
pub enum AnnouncedError {
    /// Not the JSON object it should be.
    #[error(
        "an announcement is a JSON object such as {{\"partition\": \"2024-01-15\", \"metadata\": {{\"rows\": 1200}}}}: {0}"
    )]
    Malformed(#[from] serde_json::Error),
    /// A field's value is refused.
    #[error(transparent)]
    Invalid(#[from] DatasetError),
}

impl Announced {
    /// Reads and checks an announcement; an empty body announces the
    /// dataset without a partition.
    pub fn parse(body: &[u8]) -> Result<Announced, AnnouncedError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Announced::default());
        }
        let announced: Announced = serde_json::from_slice(body)?;
        announced.check()?;
        Ok(announced)
    }

    /// Checks what serde cannot: the partition and the metadata.
    pub fn check(&self) -> Result<(), DatasetError> {
        if let Some(partition) = &self.partition {
            validate_partition(partition)?;
        }
        validate_metadata(self.metadata.as_ref())
    }
}

/// What a task declares it writes: `dw.orders` or `dw.orders/${bizdate}`,
/// whose partition is a template substituted like the task's text when an
/// attempt succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputDecl<'a> {
    /// The dataset.
    pub dataset: &'a str,
    /// The partition template, if the dataset is partitioned.
    pub partition: Option<&'a str>,
}

impl<'a> OutputDecl<'a> {
    /// Reads `name` or `name/partition template`.
    pub fn parse(text: &'a str) -> Result<OutputDecl<'a>, DatasetError> {
        let (dataset, partition) = match text.split_once('/') {
            Some((dataset, partition)) => (dataset, Some(partition)),
            None => (text, None),
        };
        validate_name(dataset)?;
        if let Some(partition) = partition {
            validate_partition(partition)?;
        }
        Ok(OutputDecl { dataset, partition })
    }
}

/// The datasets `declared` (a task's `outputs`, validated when its DAG
/// was applied) with their partitions substituted for one attempt.
pub fn written(declared: &[String], params: &ParamContext) -> Result<Vec<Written>, DatasetError> {
    declared
        .iter()
        .map(|text| {
            let decl = OutputDecl::parse(text)?;
            let partition = match decl.partition {
                None => None,
                Some(template) => {
                    let partition = params.substitute(template, Mode::Text).map_err(|source| {
                        DatasetError::Template {
                            dataset: decl.dataset.to_owned(),
                            source,
                        }
                    })?;
                    validate_partition(&partition)?;
                    Some(partition)
                }
            };
            Ok(Written {
                dataset: decl.dataset.to_owned(),
                partition,
            })
        })
        .collect()
}

/// A dataset written, as a task's success or an announcement records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// The dataset.
    pub dataset: String,
    /// The partition, if the dataset is partitioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
}

/// What a data schedule waits for: a dataset, or all or any of several
/// conditions. Written `dw.orders`, `{ all: [a, b] }`, `{ any: [a, b] }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    untagged,
    expecting = "a data condition: a dataset name (`dw.orders`), `{ all: [...] }` or `{ any: [...] }`"
)]
pub enum Condition {
    /// This dataset.
    Dataset(String),
    /// Every one of these.
    All {
        /// The conditions.
        all: Vec<Condition>,
    },
    /// At least one of these.
    Any {
        /// The conditions.
        any: Vec<Condition>,
    },
}

impl Condition {
    /// Every dataset it names.
    pub fn datasets(&self) -> BTreeSet<&str> {
        let mut names = BTreeSet::new();
        self.collect(&mut names);
        names
    }

    fn collect<'a>(&'a self, names: &mut BTreeSet<&'a str>) {
        match self {
            Condition::Dataset(name) => {
                names.insert(name);
            }
            Condition::All { all: parts } | Condition::Any { any: parts } => {
                for part in parts {
                    part.collect(names);
                }
            }
        }
    }

    /// Whether it holds, given which datasets are ready.
    pub fn is_met(&self, ready: &impl Fn(&str) -> bool) -> bool {
        match self {
            Condition::Dataset(name) => ready(name),
            Condition::All { all } => all.iter().all(|part| part.is_met(ready)),
            Condition::Any { any } => any.iter().any(|part| part.is_met(ready)),
        }
    }

    /// What is wrong with it: bad names, empty groups, too deep a nesting.
    pub fn problems(&self) -> Vec<DatasetError> {
        let mut problems = Vec::new();
        self.check(0, &mut problems);
        problems
    }

    fn check(&self, depth: usize, problems: &mut Vec<DatasetError>) {
        if depth > MAX_CONDITION_DEPTH {
            problems.push(DatasetError::TooDeep);
            return;
        }
        match self {
            Condition::Dataset(name) => problems.extend(validate_name(name).err()),
            Condition::All { all: parts } | Condition::Any { any: parts } => {
                if parts.is_empty() {
                    problems.push(DatasetError::EmptyGroup);
                }
                for part in parts {
                    part.check(depth + 1, problems);
                }
            }
        }
    }
}

/// What a second event for a partition that already started a run does.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    EnumIter,
    DeriveActiveEnum,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "lowercase")]
pub enum OnUpdate {
    /// Nothing: each partition starts one run.
    #[default]
    #[sea_orm(string_value = "ignore")]
    Ignore,
    /// A new run of the partition's date.
    #[sea_orm(string_value = "rerun")]
    Rerun,
}

impl OnUpdate {
    /// Whether it is the default, `ignore`.
    pub fn is_ignore(&self) -> bool {
        *self == OnUpdate::Ignore
    }

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            OnUpdate::Ignore => "ignore",
            OnUpdate::Rerun => "rerun",
        }
    }
}

/// Who announced a dataset event.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    EnumIter,
    DeriveActiveEnum,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "UPPERCASE")]
pub enum EventSource {
    /// A task that declared it as an output succeeded.
    #[sea_orm(string_value = "TASK")]
    Task,
    /// Someone announced it through the API.
    #[sea_orm(string_value = "API")]
    Api,
    /// A producer published it on `dj.dataset.<name>`.
    #[sea_orm(string_value = "NATS")]
    Nats,
}

impl EventSource {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventSource::Task => "TASK",
            EventSource::Api => "API",
            EventSource::Nats => "NATS",
        }
    }
}

/// The business date a partition names: `2024-01-15` or `20240115`, alone
/// or as the last `/`-separated part (`region=eu/2024-01-15`), or after
/// `dt=` (`dt=2024-01-15`); `None` for any other partition, and for a date
/// outside those DataJump stores (year 0000).
pub fn partition_biz_date(partition: &str) -> Option<NaiveDate> {
    let last = partition.rsplit('/').next()?;
    let value = last.split_once('=').map_or(last, |(_, value)| value);
    let date = match value.len() {
        10 => NaiveDate::parse_from_str(value, "%Y-%m-%d").ok(),
        8 if value.bytes().all(|b| b.is_ascii_digit()) => {
            NaiveDate::parse_from_str(value, "%Y%m%d").ok()
        }
        _ => None,
    };
    date.and_then(|date| crate::biz_date::check(date).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_a_name_and_an_optional_partition_template() {
        assert_eq!(
            OutputDecl::parse("dw.orders/${bizdate}"),
            Ok(OutputDecl {
                dataset: "dw.orders",
                partition: Some("${bizdate}")
            })
        );
        assert_eq!(
            OutputDecl::parse("dw.orders"),
            Ok(OutputDecl {
                dataset: "dw.orders",
                partition: None
            })
        );
        for bad in ["DW.orders", "dw orders", "dw.orders/", "/x", "dw..orders"] {
            assert!(OutputDecl::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn conditions_read_as_written_and_hold_as_logic_says() {
        let condition: Condition =
            serde_json::from_str(r#"{"all": ["a", {"any": ["b", "c"]}]}"#).unwrap();
        assert_eq!(condition.datasets(), BTreeSet::from(["a", "b", "c"]));
        assert!(condition.is_met(&|d| d != "b"));
        assert!(!condition.is_met(&|d| d == "b" || d == "c"));
        assert!(condition.problems().is_empty());
        let empty: Condition = serde_json::from_str(r#"{"any": []}"#).unwrap();
        assert_eq!(empty.problems(), vec![DatasetError::EmptyGroup]);
        assert!(serde_json::from_str::<Condition>(r#"{"some": ["a"]}"#).is_err());
    }

    #[test]
    fn metadata_is_a_small_object_without_nul() {
        assert!(validate_metadata(Some(&serde_json::json!({ "rows": 3 }))).is_ok());
        for bad in [
            serde_json::json!([1]),
            serde_json::json!({ "a\u{0}": 1 }),
            serde_json::json!({ "a": ["x\u{0}"] }),
            serde_json::json!({ "a": "x".repeat(MAX_METADATA) }),
        ] {
            assert_eq!(
                validate_metadata(Some(&bad)),
                Err(DatasetError::Metadata),
                "{bad}"
            );
        }
    }

    #[test]
    fn partitions_name_dates_in_the_usual_spellings() {
        let day = NaiveDate::from_ymd_opt(2024, 1, 15);
        for partition in ["2024-01-15", "20240115", "dt=2024-01-15", "eu/2024-01-15"] {
            assert_eq!(partition_biz_date(partition), day, "{partition}");
        }
        for partition in ["eu", "2024-13-01", "2024011", "x=eu"] {
            assert_eq!(partition_biz_date(partition), None, "{partition}");
        }
    }
}
