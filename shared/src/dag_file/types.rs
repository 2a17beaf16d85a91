//! The DAG file as serde reads and writes it: a type per part, with every
//! field a file may leave out defaulted, and nothing checked yet.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::defaults::{
    DEFAULT_RETRY_MAX_INTERVAL_SECS, default_biz_date_offset, default_catchup_limit,
    default_dep_type, default_max_active_runs, default_misfire_grace, default_priority,
    default_project, default_queue, default_retry_interval, default_retry_max, default_task_type,
    default_timeout, default_true, default_wait_timeout,
};
use crate::content::TaskType;
use crate::duration;
use crate::kinds::{Catchup, DepType, OverlapPolicy, RetryStrategy, Strategy};
use crate::params::Params;

// The doc of `DagFile::project` links it; that text is also the API's
// schema description, so it stays as written.
#[cfg(doc)]
use super::DEFAULT_PROJECT;

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
    /// Its fires' priority, 1-10 (10 first): fires due in the same second
    /// go out highest first. Absent: the highest `priority` of its root
    /// tasks ([`DagFile::fire_priority`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
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
    /// Event name (fires on `dj.event.<project>.<name>`).
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
    /// First day it may fire (0001-01-01 to 9999-12-31).
    #[serde(default, deserialize_with = "crate::biz_date::deserialize_optional")]
    pub start_date: Option<NaiveDate>,
    /// Last day it may fire (0001-01-01 to 9999-12-31).
    #[serde(default, deserialize_with = "crate::biz_date::deserialize_optional")]
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

impl DependencyParts<'_> {
    /// Whether the awaited task is in the same run: same DAG, same
    /// business date, not the previous run.
    pub fn is_same_run(&self) -> bool {
        self.dag.is_none() && self.offset_day == 0 && !self.previous_run
    }
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
    /// `SHELL`, `PYTHON`, `SQL`, `HTTP`, `SPARK`, `FLINK`, `SENSOR`,
    /// `SWITCH`, `NOOP` (any case).
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
    /// Conditions and the children each chooses (SWITCH).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<crate::content::SwitchCase>,
    /// The children that run when no case holds (SWITCH).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default: Vec<String>,
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
    /// Its failure does not fail the run: it still fails its children
    /// (F to them), and the run lists it among its allowed failures.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_failure: bool,
    /// Run once per item of a list, at most `max_parallel` at once
    /// (docs/DAG_FORMAT.md, "Map").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<crate::map::MapFile>,
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
        if !self.cases.is_empty() {
            content.insert("cases".to_owned(), serde_json::json!(self.cases));
        }
        if !self.default.is_empty() {
            content.insert("default".to_owned(), serde_json::json!(self.default));
        }
        serde_json::Value::Object(content)
    }
}

impl DagFile {
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
                .map(DependencyFile::parts)
                .filter(DependencyParts::is_same_run)
                .map(move |parent| (parent.task, task.name.as_str()))
        });
        crate::graph::topological_order(&names, edges)
    }

    /// The priority its fires carry: `priority` as written, else the
    /// highest of its root tasks (those without a parent in the same run),
    /// else the tasks' default. Fires of a DAG whose first tasks matter
    /// most go first without the file saying so twice.
    pub fn fire_priority(&self) -> i32 {
        self.priority.unwrap_or_else(|| {
            self.tasks
                .iter()
                .filter(|task| !task.depends_on.iter().any(|dep| dep.parts().is_same_run()))
                .map(|task| task.priority)
                .max()
                .unwrap_or_else(default_priority)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_dag_fires_at_its_own_priority_else_its_highest_root() {
        let roots = "name: x\ntasks:\n  - { name: a, command: 'true', priority: 3 }\n  - { name: b, command: 'true', priority: 7, depends_on: [{ task: y/z, offset_day: -1 }] }\n  - { name: c, command: 'true', priority: 9, depends_on: [a] }\n";
        let dag = DagFile::parse(roots).unwrap();
        assert_eq!(
            dag.fire_priority(),
            7,
            "b waits only for another DAG, so it is a root; c is not"
        );
        let written = DagFile::parse(&format!("priority: 2\n{roots}")).unwrap();
        assert_eq!(written.fire_priority(), 2, "as written wins");
        let empty = DagFile::parse("name: x\ntasks: []\n").unwrap();
        assert_eq!(empty.fire_priority(), 5, "no tasks: the tasks' default");
        let refused = DagFile::parse(&format!("priority: 11\n{roots}"))
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("priority must be 1-10, got 11"),
            "{refused}"
        );
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
}
