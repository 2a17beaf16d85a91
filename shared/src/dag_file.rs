//! The DAG file format (YAML) and its validation.
//!
//! A file is parsed into [`DagFile`] and fully validated by [`DagFile::parse`]
//! before anything is stored: unknown fields, duplicate task names, unknown
//! dependencies, cycles (named), invalid cron expressions, time zones, queue
//! and event names, and unknown task types are all reported together, each
//! naming where it is. The format is documented in `docs/DAG_FORMAT.md`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::content::{TaskContent, TaskType};
use crate::duration;
use crate::kinds::{Catchup, DepType, OverlapPolicy, RetryStrategy, Strategy};
use crate::naming::{validate_event, validate_queue};
use crate::params::Params;
use crate::subjects::DEFAULT_QUEUE;
use datajump_cron::{CronExpr, parse_time_zone};

/// A DAG file that cannot be applied.
#[derive(Debug, Error)]
pub enum DagFileError {
    /// Not YAML of the expected shape (the parser's words, with Rust type
    /// names said plainly).
    #[error("{0}")]
    Syntax(String),
    /// Parsed, but breaks rules; every problem is listed.
    #[error("DAG '{}' is invalid:\n{}", crate::naming::printable(dag), .problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// The DAG's name as written.
        dag: String,
        /// What is wrong, one line each.
        problems: Vec<String>,
    },
}

/// A DAG as written in a file. Serialized, it is the same file with every
/// default written out, which is how `datajump dag apply` sends a whole
/// definition to the API (a field left out of an update would be kept).
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DagFile {
    /// Unique name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Project id (default 1, [`DEFAULT_PROJECT`]).
    #[serde(default = "default_project")]
    pub project: i64,
    /// Responsible person or team.
    #[serde(default)]
    pub owner: Option<String>,
    /// Offline DAGs are not fired by schedules.
    #[serde(default = "default_true")]
    pub online: bool,
    /// DAG-level parameters.
    #[serde(default)]
    pub params: Params,
    /// At most this many runs at once.
    #[serde(default = "default_max_active_runs")]
    pub max_active_runs: i32,
    /// What a fire does beyond `max_active_runs`.
    #[serde(default)]
    pub overlap: OverlapPolicy,
    /// Seconds a task may wait QUEUED for a runner before it ends TIMEOUT,
    /// for tasks without their own `queue_timeout`; absent or 0: no limit.
    #[serde(default, deserialize_with = "duration::optional_seconds")]
    #[schemars(with = "Option<duration::Written>")]
    pub queue_timeout: Option<i32>,
    /// Seconds a run may be RUNNING before it is killed and ends TIMEOUT,
    /// for runs of schedules without their own `timeout`; absent or 0: no
    /// limit.
    #[serde(default, deserialize_with = "duration::optional_seconds")]
    #[schemars(with = "Option<duration::Written>")]
    pub run_timeout: Option<i32>,
    /// When it runs.
    #[serde(default)]
    pub schedules: Vec<ScheduleFile>,
    /// Webhooks called on failures, timeouts and SLA misses.
    #[serde(default)]
    pub alerts: Option<crate::alerts::AlertConfig>,
    /// What it runs.
    pub tasks: Vec<TaskFile>,
}

/// A schedule as written: `cron:`, `event:`, `after:` or `on:`.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFile {
    /// Unique within the DAG; defaults to `default`, then `schedule-<n>`.
    #[serde(default)]
    pub name: Option<String>,
    /// Cron expression.
    #[serde(default)]
    pub cron: Option<String>,
    /// Event name (fires on `dj.event.<name>`).
    #[serde(default)]
    pub event: Option<String>,
    /// A DAG whose every successful run fires this one, with its business
    /// date (a dependency trigger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Datasets whose events start a run: a name, `{ all: [...] }` or
    /// `{ any: [...] }` (a data schedule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<crate::datasets::Condition>,
    /// What a second event for a partition that already started a run
    /// does (data schedules): `ignore` (default) or `rerun`.
    #[serde(default, skip_serializing_if = "crate::datasets::OnUpdate::is_ignore")]
    pub on_update: crate::datasets::OnUpdate,
    /// IANA zone; default `DATAJUMP_TIMEZONE` or Asia/Shanghai.
    #[serde(default)]
    pub timezone: Option<String>,
    /// First day it may fire.
    #[serde(default)]
    pub start_date: Option<NaiveDate>,
    /// Last day it may fire.
    #[serde(default)]
    pub end_date: Option<NaiveDate>,
    /// Paused when false.
    #[serde(default = "default_true")]
    pub active: bool,
    /// Missed-fire policy.
    #[serde(default)]
    pub catchup: Catchup,
    /// Bound for `catchup: all`.
    #[serde(default = "default_catchup_limit")]
    pub catchup_limit: i32,
    /// Seconds after which a fire counts as missed.
    #[serde(
        default = "default_misfire_grace",
        deserialize_with = "duration::seconds"
    )]
    #[schemars(with = "duration::Written")]
    pub misfire_grace: i32,
    /// Seconds a run this schedule fires may be RUNNING (the DAG's
    /// `run_timeout` when absent; 0: no limit).
    #[serde(default, deserialize_with = "duration::optional_seconds")]
    #[schemars(with = "Option<duration::Written>")]
    pub timeout: Option<i32>,
    /// Business date = local fire date + this many days.
    #[serde(default = "default_biz_date_offset")]
    pub biz_date_offset: i32,
}

/// A retry policy as written.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryFile {
    /// Retries after the first attempt.
    #[serde(default = "default_retry_max")]
    pub max: i32,
    /// Seconds.
    #[serde(
        default = "default_retry_interval",
        deserialize_with = "duration::seconds"
    )]
    #[schemars(with = "duration::Written")]
    pub interval: i32,
    /// FIXED or EXPONENTIAL.
    #[serde(default)]
    pub strategy: RetryStrategy,
    /// Only these exit codes retry.
    #[serde(default)]
    pub on_exit_codes: Vec<i32>,
    /// Retry a TIMEOUT attempt too (default: a timeout is final).
    #[serde(default)]
    pub on_timeout: bool,
    /// Cap of the wait in seconds; default one hour, or `interval` when
    /// that is longer.
    #[serde(default, deserialize_with = "duration::optional_seconds")]
    #[schemars(with = "Option<duration::Written>")]
    pub max_interval: Option<i32>,
    /// Share of each wait (0–1) that may be randomly cut off.
    #[serde(default)]
    pub jitter: f64,
}

impl RetryFile {
    /// The cap of the wait as stored: never below `interval`, so a long
    /// FIXED interval is not cut by the default cap.
    pub fn max_interval_secs(&self) -> i32 {
        self.max_interval
            .unwrap_or(DEFAULT_RETRY_MAX_INTERVAL_SECS)
            .max(self.interval)
    }

    /// The jitter as stored: whole percent.
    pub fn jitter_pct(&self) -> i32 {
        // Validated to 0..=1 before anything is stored.
        (self.jitter.clamp(0.0, 1.0) * 100.0).round() as i32
    }
}

impl Default for RetryFile {
    fn default() -> Self {
        RetryFile {
            max: default_retry_max(),
            interval: default_retry_interval(),
            strategy: RetryStrategy::Fixed,
            on_exit_codes: Vec::new(),
            on_timeout: false,
            max_interval: None,
            jitter: 0.0,
        }
    }
}

/// A dependency as written: a bare task name, or the long form.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(
    untagged,
    expecting = "a dependency: a task name (`extract`, `other_dag/extract`) or `{ task: extract, type: STRONG or WEAK, offset_day: -1 }` or `{ task: extract, previous_run: true }`"
)]
pub enum DependencyFile {
    /// `- extract` (STRONG, same run) or `- other_dag/task`.
    Name(String),
    /// `- { task: extract, type: WEAK, offset_day: -1 }`.
    Full {
        /// `task` or `other_dag/task`.
        task: String,
        /// STRONG (default) or WEAK.
        #[serde(default = "default_dep_type", rename = "type")]
        dep_type: DepType,
        /// Business-date offset of the awaited run.
        #[serde(default)]
        offset_day: i32,
        /// The awaited run is the latest earlier run (Airflow's
        /// `depends_on_past`), whatever its business date.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        previous_run: bool,
    },
}

/// A dependency's parts: what [`DependencyFile::parts`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DependencyParts<'a> {
    /// The awaited DAG; `None` for this one.
    pub dag: Option<&'a str>,
    /// The awaited task.
    pub task: &'a str,
    /// STRONG or WEAK.
    pub dep_type: DepType,
    /// Business-date offset of the awaited run.
    pub offset_day: i32,
    /// The awaited run is the latest earlier one.
    pub previous_run: bool,
}

impl DependencyFile {
    /// Its parts; `dag` is `None` for the same DAG.
    pub fn parts(&self) -> DependencyParts<'_> {
        let (reference, dep_type, offset_day, previous_run) = match self {
            DependencyFile::Name(name) => (name.as_str(), DepType::Strong, 0, false),
            DependencyFile::Full {
                task,
                dep_type,
                offset_day,
                previous_run,
            } => (task.as_str(), *dep_type, *offset_day, *previous_run),
        };
        let (dag, task) = match reference.split_once('/') {
            Some((dag, task)) => (Some(dag), task),
            None => (None, reference),
        };
        DependencyParts {
            dag,
            task,
            dep_type,
            offset_day,
            previous_run,
        }
    }
}

/// A task as written.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    /// Unique within the DAG.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// `SHELL`, `PYTHON`, `SQL`, `HTTP`, `SPARK`, `FLINK`, `NOOP` (any case).
    #[serde(rename = "type", default = "default_task_type")]
    pub task_type: String,
    /// Shell command line(s) (SHELL).
    #[serde(default)]
    pub command: Option<String>,
    /// Script body (SHELL, PYTHON).
    #[serde(default)]
    pub script: Option<String>,
    /// SQL text (SQL).
    #[serde(default)]
    pub sql: Option<String>,
    /// Datasource name (SQL).
    #[serde(default)]
    pub datasource: Option<String>,
    /// Any other type-specific configuration.
    #[serde(default)]
    pub content: serde_json::Map<String, serde_json::Value>,
    /// Task-level parameters.
    #[serde(default)]
    pub params: Params,
    /// 1–10, higher first.
    #[serde(default = "default_priority")]
    pub priority: i32,
    /// Retry policy.
    #[serde(default)]
    pub retry: RetryFile,
    /// Seconds; 0 = none.
    #[serde(default = "default_timeout", deserialize_with = "duration::seconds")]
    #[schemars(with = "duration::Written")]
    pub timeout: i32,
    /// Seconds an `offset_day` or `other_dag/task` dependency may be waited
    /// for before the task ends TIMEOUT (default one day).
    #[serde(
        default = "default_wait_timeout",
        deserialize_with = "duration::seconds"
    )]
    #[schemars(with = "duration::Written")]
    pub wait_timeout: i32,
    /// Seconds it may wait QUEUED for a runner before it ends TIMEOUT (the
    /// DAG's `queue_timeout` when absent; 0: no limit).
    #[serde(default, deserialize_with = "duration::optional_seconds")]
    #[schemars(with = "Option<duration::Written>")]
    pub queue_timeout: Option<i32>,
    /// Worker group.
    #[serde(default = "default_queue")]
    pub queue: String,
    /// Dependency strategy.
    #[serde(default)]
    pub strategy: Strategy,
    /// Disabled tasks end SKIPPED.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Parents.
    #[serde(default)]
    pub depends_on: Vec<DependencyFile>,
    /// Datasets it writes, announced when it succeeds: `dw.orders`, or
    /// `dw.orders/${bizdate}` for one partition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
}

impl TaskFile {
    /// The task's type; `None` if the file names no known one (a
    /// validated file always does).
    pub fn task_type(&self) -> Option<TaskType> {
        TaskType::parse(&self.task_type)
    }

    /// What is wrong with the task's content for its type: a required
    /// field missing, a key the type does not take, a value of the wrong
    /// shape, a credential written in clear.
    fn content_problems(&self, task_type: TaskType) -> Vec<String> {
        let missing = match task_type {
            TaskType::Shell if self.command.is_none() && self.script.is_none() => {
                Some("a SHELL task needs 'command' or 'script'")
            }
            TaskType::Python if self.script.is_none() => Some("a PYTHON task needs 'script'"),
            TaskType::Sql
                if self.sql.is_none()
                    || (self.datasource.is_none() && !self.content.contains_key("engine")) =>
            {
                Some("a SQL task needs 'sql' and 'datasource' (or 'content.engine: spark')")
            }
            TaskType::Http if !self.content.contains_key("url") => {
                Some("an HTTP task needs 'content.url'")
            }
            _ => None,
        };
        let mut problems: Vec<String> = match missing {
            Some(missing) => vec![missing.to_owned()],
            None => TaskContent::parse(task_type, &self.content_json())
                .err()
                .map(|e| format!("content: {e}"))
                .into_iter()
                .collect(),
        };
        if task_type == TaskType::Http {
            problems.extend(crate::secrets::credential_problems(&self.content));
        }
        problems
    }

    /// Notes on parameters this task pastes bare into its script or SQL:
    /// a value a trigger or an event gives one of them is refused
    /// (`crate::params`), so each note says the form that takes any value.
    fn untrusted_param_notes(&self) -> Vec<String> {
        let Some(task_type) = TaskType::parse(&self.task_type) else {
            return Vec::new();
        };
        let Ok(content) = TaskContent::parse(task_type, &self.content_json()) else {
            return Vec::new();
        };
        use crate::params::{Mode, ScriptLang};
        let Some((text, mode)) = content.code() else {
            return Vec::new();
        };
        let form = match mode {
            Mode::Script(ScriptLang::Shell) => "read \"$<ENV>\" or write ${<NAME>:shell}",
            Mode::Script(ScriptLang::Python) => {
                "read os.environ[\"<ENV>\"] or write ${<NAME>:python}"
            }
            Mode::Sql(_) | Mode::Text => {
                "only a number or a date goes in bare; write ${<NAME>:literal} or ${<NAME>:ident} for any value"
            }
        };
        crate::params::bare_params(text)
            .into_iter()
            // A task output pasted into a script is refused outright
            // (`output_problems`); in SQL it may be a number or a date.
            .filter(|name| matches!(mode, Mode::Sql(_)) || !name.contains(".output."))
            .map(|name| {
                let env = crate::params::env_name(&name);
                let form = form.replace("<NAME>", &name).replace("<ENV>", &env);
                format!(
                    "task '{}': ${{{name}}} is pasted in as written, so a value for '{name}' from a \
                     trigger or an event will be refused: {form}",
                    self.name
                )
            })
            .collect()
    }

    /// The task outputs (`${task.output.name}`) its script pastes in bare,
    /// each with the form that takes any value.
    fn bare_outputs_in_script(&self) -> Vec<(String, String)> {
        use crate::params::{Mode, ScriptLang};
        let Some(content) = self
            .task_type()
            .and_then(|t| TaskContent::parse(t, &self.content_json()).ok())
        else {
            return Vec::new();
        };
        let Some((text, Mode::Script(lang))) = content.code() else {
            return Vec::new();
        };
        crate::params::bare_params(text)
            .into_iter()
            .filter(|name| name.contains(".output."))
            .map(|name| {
                let env = crate::params::env_name(&name);
                let form = match lang {
                    ScriptLang::Shell => format!("read \"${env}\" or write ${{{name}:shell}}"),
                    ScriptLang::Python => {
                        format!("read os.environ[\"{env}\"] or write ${{{name}:python}}")
                    }
                };
                (name, form)
            })
            .collect()
    }

    /// The stored `content` JSON: the shorthand fields folded into `content`.
    pub fn content_json(&self) -> serde_json::Value {
        let mut content = self.content.clone();
        for (key, value) in [
            ("command", &self.command),
            ("script", &self.script),
            ("sql", &self.sql),
            ("datasource", &self.datasource),
        ] {
            if let Some(value) = value {
                content.insert(key.to_owned(), serde_json::Value::String(value.clone()));
            }
        }
        serde_json::Value::Object(content)
    }
}

impl From<serde_yaml_ng::Error> for DagFileError {
    fn from(error: serde_yaml_ng::Error) -> DagFileError {
        DagFileError::Syntax(plain_types(&error.to_string()))
    }
}

/// `message` with the Rust type names serde puts in "expected …" said as
/// a user would: `expected i32` is `expected a whole number`.
fn plain_types(message: &str) -> String {
    const NAMES: [(&str, &str); 12] = [
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u32", "expected a whole number of 0 or more"),
        ("expected u64", "expected a whole number of 0 or more"),
        ("expected usize", "expected a whole number of 0 or more"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected a mapping (key: value)"),
        ("expected struct ", "expected a mapping for "),
    ];
    NAMES
        .iter()
        .fold(message.to_owned(), |text, (rust, plain)| {
            text.replace(rust, plain)
        })
}

/// How many unknown fields [`parse_past_unknown_fields`] reports at most.
const MAX_UNKNOWN_FIELDS: usize = 50;

/// The field and the expected ones of serde's "unknown field `x`,
/// expected one of `a`, `b`" (or "expected `a`"), if `message` is one.
fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.split_once("unknown field `")?.1;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .split_once("expected")
        .map(|(_, list)| {
            list.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some((field.to_owned(), expected))
}

/// "did you mean `command`?" for a near miss among `expected`.
fn did_you_mean(field: &str, expected: &[String]) -> String {
    expected
        .iter()
        .map(|name| (strsim::damerau_levenshtein(field, name), name))
        .filter(|(distance, name)| *distance <= 2.max(name.len() / 3))
        .min()
        .map_or_else(String::new, |(_, name)| format!(": did you mean `{name}`?"))
}

/// Parses a file that has unknown fields, reporting every one of them (a
/// serde error stops at the first): each is named with its path and the
/// nearest allowed name, removed, and the file parsed again. Returns the
/// file once nothing else is wrong with its shape, with the unknown
/// fields as problems; or `None` and the problems, the last being the
/// first error that is not an unknown field.
fn parse_past_unknown_fields(text: &str) -> Result<(Option<DagFile>, Vec<String>), DagFileError> {
    let mut value: serde_yaml_ng::Value = serde_yaml_ng::from_str(text)?;
    let mut problems = Vec::new();
    while problems.len() < MAX_UNKNOWN_FIELDS {
        let error = match serde_path_to_error::deserialize::<_, DagFile>(value.clone()) {
            Ok(dag) => return Ok((Some(dag), problems)),
            Err(error) => error,
        };
        let path = error.path().clone();
        let message = error.into_inner().to_string();
        let Some((field, expected)) = unknown_field(&message) else {
            problems.push(at_path(&path, &plain_types(&message)));
            return Ok((None, problems));
        };
        let hint = match did_you_mean(&field, &expected) {
            hint if hint.is_empty() => format!(" (allowed: {})", expected.join(", ")),
            hint => hint,
        };
        problems.push(at_path(&path, &format!("unknown field `{field}`{hint}")));
        if !remove_at(&mut value, &path, &field) {
            return Ok((None, problems));
        }
    }
    Ok((None, problems))
}

/// `message` prefixed by where it applies (`tasks[0].retry`), unless at the top.
fn at_path(path: &serde_path_to_error::Path, message: &str) -> String {
    let shown = path.to_string();
    // The path of an unknown field ends with the field itself.
    let shown = shown
        .rsplit_once('.')
        .map_or(String::new(), |(parent, _)| parent.to_owned());
    if shown.is_empty() || shown == "." {
        message.to_owned()
    } else {
        format!("{shown}: {message}")
    }
}

/// Removes `field` from the mapping `path` leads to (the path of an
/// unknown field ends with the field itself); false when it cannot be
/// found, so the caller stops instead of looping.
fn remove_at(
    value: &mut serde_yaml_ng::Value,
    path: &serde_path_to_error::Path,
    field: &str,
) -> bool {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let mut here = value;
    for segment in segments.iter().take(segments.len().saturating_sub(1)) {
        let next = match segment {
            Segment::Seq { index } => here.get_mut(*index),
            Segment::Map { key } => here.get_mut(key.as_str()),
            Segment::Enum { .. } | Segment::Unknown => Some(here),
        };
        match next {
            Some(next) => here = next,
            None => return false,
        }
    }
    here.as_mapping_mut()
        .is_some_and(|map| map.remove(field).is_some())
}

/// The `name:` of a file whose shape is wrong, for its error.
fn dag_name_in(text: &str) -> String {
    serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
        .ok()
        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_owned))
        .unwrap_or_default()
}

fn default_true() -> bool {
    true
}
/// The project a DAG file means when it names none: `default`, the one
/// every installation has.
pub const DEFAULT_PROJECT: i64 = 1;

/// [`DEFAULT_PROJECT`], for serde.
pub fn default_project() -> i64 {
    DEFAULT_PROJECT
}
fn default_max_active_runs() -> i32 {
    1
}
fn default_catchup_limit() -> i32 {
    100
}
fn default_misfire_grace() -> i32 {
    60
}
fn default_biz_date_offset() -> i32 {
    crate::biz_date::DEFAULT_OFFSET_DAYS
}
fn default_retry_max() -> i32 {
    3
}
fn default_retry_interval() -> i32 {
    60
}
/// Default cap of an EXPONENTIAL retry's wait, in seconds: one hour.
pub const DEFAULT_RETRY_MAX_INTERVAL_SECS: i32 = 3600;
fn default_dep_type() -> DepType {
    DepType::Strong
}
fn default_task_type() -> String {
    "SHELL".to_owned()
}
fn default_priority() -> i32 {
    5
}
fn default_timeout() -> i32 {
    3600
}
/// Default wait for a cross-run dependency: one day.
pub const DEFAULT_WAIT_TIMEOUT_SECS: i32 = 86_400;

fn default_wait_timeout() -> i32 {
    DEFAULT_WAIT_TIMEOUT_SECS
}
fn default_queue() -> String {
    DEFAULT_QUEUE.to_owned()
}

impl DagFile {
    /// Notes, not errors, on the tasks that paste a parameter bare into a
    /// script or SQL: a value a trigger or an event gives it will be refused
    /// (`crate::params`), and each note says the form that takes any value.
    pub fn untrusted_param_notes(&self) -> Vec<String> {
        self.tasks
            .iter()
            .flat_map(TaskFile::untrusted_param_notes)
            .collect()
    }

    /// Parses and validates a DAG file's text.
    pub fn parse(text: &str) -> Result<DagFile, DagFileError> {
        let (dag, mut problems) = match serde_yaml_ng::from_str::<DagFile>(text) {
            Ok(dag) => (dag, Vec::new()),
            Err(e) if unknown_field(&e.to_string()).is_some() => {
                match parse_past_unknown_fields(text)? {
                    (Some(dag), unknown) => (dag, unknown),
                    (None, problems) => {
                        return Err(DagFileError::Invalid {
                            dag: dag_name_in(text),
                            problems,
                        });
                    }
                }
            }
            Err(e) => return Err(e.into()),
        };
        problems.extend(dag.problems());
        if problems.is_empty() {
            Ok(dag)
        } else {
            Err(DagFileError::Invalid {
                dag: dag.name,
                problems,
            })
        }
    }

    /// Schedule names, with defaults filled in, in file order.
    pub fn schedule_names(&self) -> Vec<String> {
        self.schedules
            .iter()
            .enumerate()
            .map(|(i, s)| match (&s.name, i) {
                (Some(name), _) => name.clone(),
                (None, 0) => "default".to_owned(),
                (None, i) => format!("schedule-{}", i + 1),
            })
            .collect()
    }

    /// Task names in an order where every parent comes before its children,
    /// or the tasks of one cycle, in cycle order.
    pub fn topological_order(&self) -> Result<Vec<String>, Vec<String>> {
        let names: Vec<&str> = self.tasks.iter().map(|t| t.name.as_str()).collect();
        let edges = self.tasks.iter().flat_map(|task| {
            task.depends_on
                .iter()
                .filter_map(move |dep| match dep.parts() {
                    DependencyParts {
                        dag: None,
                        task: parent,
                        offset_day: 0,
                        previous_run: false,
                        ..
                    } => Some((parent, task.name.as_str())),
                    _ => None,
                })
        });
        crate::graph::topological_order(&names, edges)
    }

    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !is_name(&self.name) {
            problems.push(format!(
                "name '{}': {NAME_RULE}",
                crate::naming::printable(&self.name)
            ));
        }
        if self.max_active_runs < 1 {
            problems.push(format!(
                "max_active_runs: must be at least 1, got {}",
                self.max_active_runs
            ));
        }
        for (field, value) in [
            ("queue_timeout", self.queue_timeout),
            ("run_timeout", self.run_timeout),
        ] {
            if value.is_some_and(|secs| secs < 0) {
                problems.push(format!(
                    "{field}: must not be negative (0 or absent = none)"
                ));
            }
        }
        self.schedule_problems(&mut problems);
        self.task_problems(&mut problems);
        self.output_problems(&mut problems);
        problems
    }

    /// A `${task.output.name}` must name a task this one runs after in the
    /// same run (directly or through others): otherwise it may not have
    /// finished, and the value would depend on timing.
    fn output_problems(&self, problems: &mut Vec<String>) {
        let parents: HashMap<&str, Vec<&str>> = self
            .tasks
            .iter()
            .map(|task| {
                let same_run = task
                    .depends_on
                    .iter()
                    .map(DependencyFile::parts)
                    .filter(|p| p.dag.is_none() && p.offset_day == 0 && !p.previous_run)
                    .map(|p| p.task)
                    .collect();
                (task.name.as_str(), same_run)
            })
            .collect();
        for task in &self.tasks {
            let at = format!("task '{}'", crate::naming::printable(&task.name));
            problems.extend(task.bare_outputs_in_script().into_iter().map(|(name, form)| {
                format!(
                    "{at}: ${{{name}}} is a task output, made at run time, so it cannot be pasted into a script as written: {form}"
                )
            }));
            let text = task.content_json().to_string();
            for read in crate::outputs::tasks_read(&text) {
                if !parents.contains_key(read) {
                    problems.push(format!(
                        "{at}: reads the output of '{read}', which is not a task of this DAG"
                    ));
                    continue;
                }
                let mut seen = BTreeSet::new();
                let mut frontier = parents.get(task.name.as_str()).cloned().unwrap_or_default();
                while let Some(parent) = frontier.pop() {
                    if seen.insert(parent) {
                        frontier.extend(parents.get(parent).into_iter().flatten().copied());
                    }
                }
                if !seen.contains(read) {
                    problems.push(format!(
                        "{at}: reads the output of '{read}' but does not run after it: add '{read}' to its depends_on (directly or through a task that does)"
                    ));
                }
            }
        }
    }

    fn schedule_problems(&self, problems: &mut Vec<String>) {
        let mut seen = BTreeSet::new();
        for (schedule, name) in self.schedules.iter().zip(self.schedule_names()) {
            let at = format!("schedule '{name}'");
            if !seen.insert(name.clone()) {
                problems.push(format!("{at}: duplicate schedule name"));
            }
            if schedule.on.is_none() && !schedule.on_update.is_ignore() {
                problems.push(format!("{at}: on_update is for data schedules (with 'on')"));
            }
            match (&schedule.cron, &schedule.event, &schedule.after) {
                (None, None, None) if schedule.on.is_some() => {
                    let condition = schedule.on.as_ref().map(|on| on.problems());
                    for e in condition.into_iter().flatten() {
                        problems.push(format!("{at}: on: {e}"));
                    }
                }
                _ if schedule.on.is_some() => problems.push(format!(
                    "{at}: give exactly one of 'cron', 'event', 'after' or 'on'"
                )),
                (None, None, Some(upstream)) => {
                    if !is_name(upstream) {
                        problems.push(format!(
                            "{at}: after '{}': {NAME_RULE}",
                            crate::naming::printable(upstream)
                        ));
                    } else if *upstream == self.name {
                        problems.push(format!(
                            "{at}: after '{upstream}' is this DAG: a run would start the next for ever"
                        ));
                    }
                }
                (Some(cron), None, None) => match CronExpr::parse(cron) {
                    Err(e) => problems.push(format!("{at}: {e}")),
                    // Any zone will do: a day that does not exist (Feb 30)
                    // or a year gone by does not come in any.
                    Ok(expr) if expr.next_after(&chrono::Utc::now()).is_none() => {
                        problems.push(format!(
                            "{at}: '{cron}' never fires (a date that does not exist, or a year gone by)"
                        ));
                    }
                    Ok(_) => {}
                },
                (None, Some(event), None) => {
                    if let Err(e) = validate_event(event) {
                        problems.push(format!("{at}: {e}"));
                    }
                }
                _ => problems.push(format!(
                    "{at}: give exactly one of 'cron', 'event', 'after' or 'on'"
                )),
            }
            if let Some(zone) = &schedule.timezone
                && let Err(e) = parse_time_zone(zone)
            {
                problems.push(format!("{at}: {e}"));
            }
            if let (Some(start), Some(end)) = (schedule.start_date, schedule.end_date)
                && end < start
            {
                problems.push(format!("{at}: end_date {end} is before start_date {start}"));
            }
            if schedule.catchup_limit < 0 || schedule.misfire_grace < 0 {
                problems.push(format!(
                    "{at}: catchup_limit and misfire_grace must not be negative"
                ));
            }
            if schedule.timeout.is_some_and(|secs| secs < 0) {
                problems.push(format!(
                    "{at}: timeout must not be negative (0 = none; absent = the DAG's run_timeout)"
                ));
            }
        }
    }

    fn task_problems(&self, problems: &mut Vec<String>) {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for task in &self.tasks {
            *seen.entry(task.name.as_str()).or_default() += 1;
        }
        for (name, count) in &seen {
            if *count > 1 {
                problems.push(format!("task '{name}': defined {count} times"));
            }
        }
        if let Some(alerts) = &self.alerts {
            problems.extend(alerts.problems());
        }
        for task in &self.tasks {
            let at = format!("task '{}'", crate::naming::printable(&task.name));
            if !is_name(&task.name) {
                problems.push(format!("{at}: name {NAME_RULE}"));
            }
            match task.task_type() {
                None => problems.push(format!(
                    "{at}: unknown type '{}' (known: {})",
                    task.task_type,
                    TaskType::names()
                )),
                Some(task_type) => problems.extend(
                    task.content_problems(task_type)
                        .into_iter()
                        .map(|problem| format!("{at}: {problem}")),
                ),
            }
            if !(1..=10).contains(&task.priority) {
                problems.push(format!(
                    "{at}: priority must be 1-10, got {}",
                    task.priority
                ));
            }
            if task.retry.max < 0 || task.retry.interval < 0 {
                problems.push(format!("{at}: retry max and interval must not be negative"));
            }
            if let Some(cap) = task.retry.max_interval
                && cap < task.retry.interval
            {
                problems.push(format!(
                    "{at}: retry max_interval {cap} is below its interval {}",
                    task.retry.interval
                ));
            }
            if !(0.0..=1.0).contains(&task.retry.jitter) {
                problems.push(format!(
                    "{at}: retry jitter must be a fraction from 0 to 1, got {}",
                    task.retry.jitter
                ));
            }
            if task.wait_timeout < 1 {
                problems.push(format!("{at}: wait_timeout must be at least 1 second"));
            }
            if task.timeout < 0 {
                problems.push(format!("{at}: timeout must not be negative (0 = none)"));
            }
            if task.queue_timeout.is_some_and(|secs| secs < 0) {
                problems.push(format!(
                    "{at}: queue_timeout must not be negative (0 or absent = none)"
                ));
            }
            if let Err(e) = validate_queue(&task.queue) {
                problems.push(format!("{at}: {e}"));
            }
            let mut written = BTreeSet::new();
            for output in &task.outputs {
                match crate::datasets::OutputDecl::parse(output) {
                    Err(e) => problems.push(format!("{at}: outputs: {e}")),
                    Ok(decl) if !written.insert(decl.dataset) => problems.push(format!(
                        "{at}: outputs: '{}' is listed more than once; a task writes one partition of a dataset per run",
                        decl.dataset
                    )),
                    Ok(_) => {}
                }
            }
            let mut awaited = BTreeSet::new();
            for dep in &task.depends_on {
                let DependencyParts {
                    dag,
                    task: parent,
                    offset_day,
                    previous_run,
                    ..
                } = dep.parts();
                // One edge per awaited instance: a second, maybe of another
                // type, would be counted twice or contradict the first.
                if !awaited.insert((dag, parent, offset_day, previous_run)) {
                    let reference =
                        dag.map_or_else(|| parent.to_owned(), |d| format!("{d}/{parent}"));
                    problems.push(format!(
                        "{at}: depends on '{reference}' more than once; list each dependency once (with its type)"
                    ));
                }
                if previous_run && offset_day != 0 {
                    problems.push(format!(
                        "{at}: dependency on '{parent}' gives both previous_run and offset_day: \
                         previous_run is the latest earlier run, whatever its date; use one"
                    ));
                }
                match dag {
                    Some(dag) if dag.is_empty() || parent.is_empty() => problems.push(format!(
                        "{at}: dependency '{dag}/{parent}' must be 'other_dag/task'"
                    )),
                    Some(_) => {}
                    None if !seen.contains_key(parent) => {
                        problems.push(format!("{at}: depends on unknown task '{parent}'"))
                    }
                    None if parent == task.name && offset_day == 0 && !previous_run => {
                        problems.push(format!("{at}: depends on itself"))
                    }
                    None => {}
                }
            }
        }
        let names_ok = seen.values().all(|&c| c == 1);
        if names_ok
            && !problems.iter().any(|p| p.contains("depends on itself"))
            && let Err(cycle) = self.topological_order()
        {
            problems.push(format!("cycle: {}", cycle.join(" -> ")));
        }
    }
}

/// What a DAG or task name may be, as the error says it.
const NAME_RULE: &str =
    "must be 1-128 characters without '/', control characters or direction overrides";

/// Whether `name` may name a DAG or a task: it is printed in terminals,
/// logs and the UI, and is part of paths.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.contains('/')
        && !name.chars().any(crate::naming::is_unprintable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_dependencies_and_crons_that_never_fire_are_refused() {
        let text = "name: z\nschedules:\n  - { name: feb30, cron: '0 0 0 30 2 ?' }\n  - { name: gone, cron: '0 0 0 1 1 ? 2020' }\n  - { name: daily, cron: '0 0 2 * * ?' }\ntasks:\n  - { name: a, command: 'true' }\n  - name: b\n    command: 'true'\n    depends_on: [a, { task: a, type: WEAK }, { task: a, offset_day: -1 }]\n";
        let Err(DagFileError::Invalid { problems, .. }) = DagFile::parse(text) else {
            panic!("invalid");
        };
        assert_eq!(
            problems,
            [
                "schedule 'feb30': '0 0 0 30 2 ?' never fires (a date that does not exist, or a year gone by)",
                "schedule 'gone': '0 0 0 1 1 ? 2020' never fires (a date that does not exist, or a year gone by)",
                "task 'b': depends on 'a' more than once; list each dependency once (with its type)",
            ],
            "the offset edge is another instance, and the daily schedule fires"
        );
    }

    #[test]
    fn every_unknown_field_is_reported_at_once_with_a_suggestion() {
        let text = "name: x\nshedules: []\ntasks:\n  - name: a\n    comand: 'true'\n    priorty: 3\n    retry: { maxx: 2 }\n  - name: b\n    command: 'true'\n    priority: high\n";
        let Err(DagFileError::Invalid { dag, problems }) = DagFile::parse(text) else {
            panic!("a file with unknown fields is invalid");
        };
        assert_eq!(dag, "x");
        let all = problems.join("\n");
        for expected in [
            "unknown field `shedules`",
            "did you mean `schedules`?",
            "tasks[1]: invalid type: string \"high\", expected a whole number",
            "tasks[0]: unknown field `comand`",
            "did you mean `command`?",
            "tasks[0]: unknown field `priorty`",
            "did you mean `priority`?",
            "tasks[0].retry: unknown field `maxx`",
            "did you mean `max`?",
        ] {
            assert!(all.contains(expected), "no {expected:?} in:\n{all}");
        }
        assert!(!all.contains("i32"), "{all}");
        // With the unknown fields set aside, the rules are checked too.
        let Err(DagFileError::Invalid { problems, .. }) =
            DagFile::parse("name: y\ntasks:\n  - name: a\n    comand: 'true'\n")
        else {
            panic!("invalid");
        };
        assert_eq!(
            problems,
            [
                "tasks[0]: unknown field `comand`: did you mean `command`?",
                "task 'a': a SHELL task needs 'command' or 'script'"
            ]
        );
    }

    const DIAMOND: &str = r#"
name: diamond
schedules:
  - cron: "0 * * * * ?"
tasks:
  - { name: a, command: "true" }
  - { name: b, command: "true", depends_on: [a] }
  - { name: c, command: "true", depends_on: [a] }
  - { name: d, command: "true", depends_on: [b, c] }
"#;

    #[test]
    fn diamond_parses_in_topological_order() {
        let dag = DagFile::parse(DIAMOND).unwrap();
        let order = dag.topological_order().unwrap();
        assert_eq!(order.first().map(String::as_str), Some("a"));
        assert_eq!(order.last().map(String::as_str), Some("d"));
        assert_eq!(dag.schedule_names(), vec!["default"]);
    }

    #[test]
    fn task_defaults_are_the_documented_ones() {
        let dag = DagFile::parse(DIAMOND).unwrap();
        let a = &dag.tasks[0];
        assert_eq!(a.timeout, 3600, "one hour");
        assert_eq!((a.retry.max, a.retry.interval), (3, 60));
        assert_eq!((a.priority, a.queue.as_str()), (5, "default"));
        let none =
            DagFile::parse("name: x\ntasks: [{ name: a, command: 'true', timeout: 0 }]\n").unwrap();
        assert_eq!(none.tasks[0].timeout, 0, "0 = no timeout is accepted");
    }

    #[test]
    fn cycle_is_named() {
        let text = r#"
name: cyc
tasks:
  - { name: a, command: "true" }
  - { name: b, command: "true", depends_on: [a, d] }
  - { name: c, command: "true", depends_on: [b] }
  - { name: d, command: "true", depends_on: [c] }
"#;
        let err = DagFile::parse(text).unwrap_err().to_string();
        assert!(err.contains("cycle: "), "{err}");
        for name in ["b", "c", "d"] {
            assert!(err.contains(name), "{err}");
        }
        assert!(!err.contains("-> a"), "{err}");
    }

    #[test]
    fn every_problem_is_reported() {
        let text = r#"
name: bad
schedules:
  - cron: "0 60 * * * ?"
  - event: "Bad Event"
    name: ev
tasks:
  - { name: a, type: SHELL, command: "true", queue: "no.dots" }
  - { name: a, type: COBOL }
  - { name: b, command: "true", depends_on: [ghost] }
"#;
        let err = DagFile::parse(text).unwrap_err().to_string();
        for needle in [
            "schedule 'default'",
            "schedule 'ev'",
            "invalid queue name 'no.dots'",
            "task 'a': defined 2 times",
            "unknown type 'COBOL'",
            "unknown task 'ghost'",
        ] {
            assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
        }
    }

    #[test]
    fn names_that_would_rewrite_a_terminal_are_refused() {
        let text = "name: \"ok\\nDataJump is up.\"\ntasks:\n  - { name: \"t\\u001b[2J\", command: \"true\" }\n";
        let err = DagFile::parse(text).unwrap_err().to_string();
        assert!(err.contains("name 'ok\\nDataJump is up.'"), "{err}");
        assert!(err.contains("task 't\\u{1b}[2J'"), "{err}");
        assert!(!err.contains("\nDataJump"), "{err}");
        assert!(DagFile::parse("name: 夜间汇总\ntasks: []\n").is_ok());
    }

    #[test]
    fn a_bad_dependency_says_what_one_looks_like() {
        let err = DagFile::parse(
            "name: x\ntasks:\n  - { name: a, command: 'true' }\n  - { name: b, command: 'true', depends_on: [{ task: a, type: weak }] }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("tasks[1].depends_on"), "{err}");
        assert!(err.contains("type: STRONG or WEAK"), "{err}");
        assert!(!err.contains("DependencyFile"), "a Rust type name: {err}");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = DagFile::parse("name: x\ntasks: []\nschedule: oops\n").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `schedule`"),
            "{err}"
        );
    }

    #[test]
    fn bare_parameters_in_scripts_and_sql_are_noted() {
        let dag = DagFile::parse(
            r#"
name: notes
params: { region: eu, p: "1" }
tasks:
  - { name: sh, command: "echo ${region} ${bizdate} ${region:shell} $$DJ_PARAM_X" }
  - { name: py, type: PYTHON, script: "print('${p}')" }
  - { name: q, type: SQL, datasource: dw, sql: "select ${p}, ${p:literal}" }
  - { name: ok, command: "echo \"$DJ_PARAM_REGION\"" }
"#,
        )
        .expect("a valid DAG");
        let notes = dag.untrusted_param_notes();
        assert_eq!(notes.len(), 3, "{notes:#?}");
        assert!(notes[0].contains("task 'sh': ${region}") && notes[0].contains("${region:shell}"));
        assert!(notes[0].contains("\"$DJ_PARAM_REGION\""), "{}", notes[0]);
        assert!(notes[1].contains("task 'py'") && notes[1].contains("${p:python}"));
        assert!(notes[2].contains("task 'q'") && notes[2].contains("${p:literal}"));
    }

    #[test]
    fn content_keys_a_type_does_not_take_are_rejected() {
        let text = r#"
name: typo
tasks:
  - name: call
    type: http
    content: { url: "https://example.com", secretHeader: [X-Api-Key] }
  - { name: run, command: "true", content: { env: { A: "1" } } }
  - name: ok
    type: HTTP
    content: { url: "https://example.com", secret_headers: [X-Api-Key], success_codes: [200, 204] }
"#;
        let err = DagFile::parse(text).unwrap_err().to_string();
        assert!(
            err.contains("task 'call': content: ") && err.contains("secretHeader"),
            "{err}"
        );
        assert!(
            err.contains("task 'run': content: ") && err.contains("env"),
            "{err}"
        );
        assert!(!err.contains("task 'ok'"), "{err}");
    }

    #[test]
    fn retry_options_are_read_and_checked() {
        let text = r#"
name: retries
tasks:
  - name: a
    command: "true"
    retry: { max: 2, interval: 10, strategy: EXPONENTIAL, on_timeout: true, max_interval: 60, jitter: 0.25 }
  - { name: b, command: "true", retry: { interval: 7200 } }
"#;
        let dag = DagFile::parse(text).unwrap();
        let a = &dag.tasks[0].retry;
        assert!(a.on_timeout);
        assert_eq!((a.max_interval_secs(), a.jitter_pct()), (60, 25));
        let b = &dag.tasks[1].retry;
        assert!(!b.on_timeout, "a timeout is final unless the task says so");
        assert_eq!(
            b.max_interval_secs(),
            7200,
            "the default cap never cuts the interval"
        );
        assert_eq!(b.jitter_pct(), 0);

        let bad = r#"
name: bad
tasks:
  - { name: a, command: "true", retry: { interval: 60, max_interval: 30, jitter: 1.5 } }
"#;
        let err = DagFile::parse(bad).unwrap_err().to_string();
        for needle in [
            "max_interval 30 is below its interval 60",
            "jitter must be a fraction",
        ] {
            assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
        }
    }

    #[test]
    fn cross_dag_and_offset_dependencies_are_not_cycles() {
        let text = r#"
name: daily
tasks:
  - name: report
    command: "true"
    depends_on:
      - { task: report, offset_day: -1 }
      - other/load
"#;
        DagFile::parse(text).unwrap();
    }
}
