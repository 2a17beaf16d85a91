//! Domain types of a DAG's plan, and the one mapping from table rows to them.
//!
//! A run snapshots its plan when it is created, so a DAG changed while it runs
//! does not change what the run does. Each instance keeps its own resolved
//! [`InstanceSpec`], which is exactly what travels in its work message:
//! runners never read task definitions.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::content::TaskType;
use crate::dag_file::DEFAULT_RETRY_MAX_INTERVAL_SECS;
use crate::entities::{dag, task, task_dependency};
use crate::kinds::{DepType, RetryStrategy, Strategy};
use crate::params::{Params, params_from_json};

/// Longest wait between retries whatever a policy says: one day.
const RETRY_DELAY_CEILING_SECS: i64 = 24 * 3600;

/// A task's retry policy: FIXED or EXPONENTIAL, with the exit codes that retry.
///
/// Fields added after the first release have serde defaults, so specs
/// stored in older runs and work messages still read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max: i32,
    /// Base interval in seconds.
    pub interval_secs: i32,
    /// FIXED or EXPONENTIAL.
    pub strategy: RetryStrategy,
    /// Only these exit codes retry; empty means any failure.
    pub on_exit_codes: Vec<i32>,
    /// Whether a TIMEOUT attempt is retried like a failure (the
    /// requirements' state machine draws no retry arrow from TIMEOUT, so
    /// the default is no).
    #[serde(default)]
    pub on_timeout: bool,
    /// Cap of the wait in seconds (never below `interval_secs`).
    #[serde(default = "default_max_interval")]
    pub max_interval_secs: i32,
    /// Jitter in percent: each wait is shortened by a random part of at
    /// most this share, so retries of many tasks that failed together
    /// spread out instead of arriving at once.
    #[serde(default)]
    pub jitter_pct: i32,
}

fn default_max_interval() -> i32 {
    DEFAULT_RETRY_MAX_INTERVAL_SECS
}

impl RetryPolicy {
    /// Seconds to wait before retry number `retry` (1-based). The wait is
    /// `interval` (FIXED) or `interval × 2^(retry−1)` (EXPONENTIAL), capped
    /// at `max(max_interval, interval)`, then shortened by
    /// `jitter × sample` of itself: with `sample` in `[0, 1)` it lies in
    /// `(capped × (1 − jitter), capped]`.
    ///
    /// Written here rather than taken from a backoff crate (`backon`,
    /// `backoff`): those drive a retry loop inside one process, while this
    /// wait is computed from a policy stored with the task, once, when an
    /// attempt fails, and kept in the database (`deadline_at`) for whichever
    /// ticker requeues it.
    pub fn delay_secs(&self, retry: i32, sample: f64) -> i64 {
        let base = i64::from(self.interval_secs.max(0));
        let grown = match self.strategy {
            RetryStrategy::Fixed => base,
            RetryStrategy::Exponential => base.saturating_mul(1_i64 << (retry - 1).clamp(0, 30)),
        };
        let cap = i64::from(self.max_interval_secs).max(base);
        let capped = grown.min(cap).min(RETRY_DELAY_CEILING_SECS);
        let jitter = f64::from(self.jitter_pct.clamp(0, 100)) / 100.0;
        // At most `capped`, which is at most a day: the cast is exact.
        let cut = (capped as f64 * jitter * sample.clamp(0.0, 1.0)).floor() as i64;
        capped - cut.min(capped)
    }

    /// [`RetryPolicy::delay_secs`] with a random jitter sample.
    pub fn random_delay_secs(&self, retry: i32) -> i64 {
        self.delay_secs(retry, rand::random::<f64>())
    }
}

/// A task as a run sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// `task.id`.
    pub task_id: i64,
    /// Task name.
    pub name: String,
    /// What it runs as.
    pub task_type: TaskType,
    /// Type-specific configuration.
    pub content: serde_json::Value,
    /// Task-level parameters.
    pub params: Params,
    /// 1–10.
    pub priority: i32,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Seconds; 0 = none.
    pub timeout_secs: i32,
    /// Seconds a cross-run dependency may be waited for.
    #[serde(default = "default_wait_timeout")]
    pub wait_timeout_secs: i32,
    /// Seconds it may wait QUEUED for a runner, its own or its DAG's;
    /// `None`: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_timeout_secs: Option<i32>,
    /// Worker group.
    pub queue: String,
    /// Dependency strategy.
    pub strategy: Strategy,
    /// Disabled tasks end SKIPPED.
    pub enabled: bool,
    /// Its failure does not fail the run (its children still see it as F).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_failure: bool,
    /// Datasets it writes, as declared (`dw.orders/${bizdate}`): announced
    /// when an attempt succeeds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// Run once per item of a list (docs/DAG_FORMAT.md, "Map").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<crate::map::MapSpec>,
}

fn default_wait_timeout() -> i32 {
    crate::dag_file::DEFAULT_WAIT_TIMEOUT_SECS
}

/// An edge of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEdge {
    /// Parent task name.
    pub parent: String,
    /// DAG of the parent when it is another DAG.
    pub parent_dag: Option<String>,
    /// Child task name.
    pub child: String,
    /// STRONG or WEAK.
    pub dep_type: DepType,
    /// Business-date offset of the awaited run.
    pub offset_day: i32,
    /// The awaited run is the latest earlier run of the awaited DAG.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub previous_run: bool,
}

impl PlanEdge {
    /// True when the parent is in the same run (same DAG, same business date).
    pub fn is_same_run(&self) -> bool {
        self.parent_dag.is_none() && self.offset_day == 0 && !self.previous_run
    }
}

/// A DAG's tasks and edges as of one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// `dag.id`.
    pub dag_id: i64,
    /// DAG name.
    pub dag_name: String,
    /// The DAG's project, whose secrets and datasources its tasks use
    /// (plans stored before projects were rows are of the default one).
    #[serde(default = "crate::dag_file::default_project")]
    pub project_id: i64,
    /// DAG version.
    pub version: i32,
    /// DAG-level parameters.
    pub params: Params,
    /// Tasks.
    pub tasks: Vec<TaskSpec>,
    /// Edges.
    pub edges: Vec<PlanEdge>,
}

impl Plan {
    /// What `params`, given by a trigger or an event (untrusted), would
    /// break in this plan's scripts and SQL: each problem names the task
    /// and the form to write instead. Empty when every task would run.
    /// The runner applies the same rules ([`crate::params`]); this finds
    /// the refusals before a run exists.
    pub fn untrusted_param_problems(&self, params: &Params) -> Vec<String> {
        use crate::content::TaskContent;
        use crate::params::{ParamContext, ParamError};
        let mut problems = Vec::new();
        for task in &self.tasks {
            let Ok(content) = TaskContent::parse(task.task_type, &task.content) else {
                continue;
            };
            let arguments = content.arguments();
            let code = content.code();
            if code.is_none() && arguments.is_empty() {
                continue;
            }
            let mut merged = self.params.clone();
            merged.extend(task.params.clone());
            merged.extend(params.clone());
            let context = ParamContext {
                biz_date: Utc::now().date_naive(),
                logical_time: Utc::now(),
                time_zone: chrono_tz::UTC,
                run_id: 0,
                task_name: task.name.clone(),
                params: merged,
                untrusted: params.keys().cloned().collect(),
            };
            if let Some((text, mode)) = code
                && let Err(
                    e @ (ParamError::UntrustedInScript { .. }
                    | ParamError::UntrustedSqlValue { .. }
                    | ParamError::MisplacedQuote(_)),
                ) = context.substitute(text, mode)
            {
                problems.push(format!("task {}: {e}", task.name));
            }
            for (field, text) in arguments {
                if let Err(e @ ParamError::UntrustedOption { .. }) =
                    context.substitute_argument(text)
                {
                    problems.push(format!("task {}: '{field}': {e}", task.name));
                }
            }
        }
        problems
    }
}

/// What one instance needs to run, resolved when its run is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceSpec {
    /// DAG name.
    pub dag_name: String,
    /// The schedule that fired the run, `None` for manual runs and
    /// triggers: what each attempt's `execution.schedule_id` records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<i64>,
    /// The DAG's project: its tasks may use that project's secrets and
    /// datasources only (specs written before projects were rows are of
    /// the default one).
    #[serde(default = "crate::dag_file::default_project")]
    pub project_id: i64,
    /// The run's logical time.
    pub logical_time: DateTime<Utc>,
    /// IANA zone the run's dates are read in (its schedule's, or the default).
    pub time_zone: String,
    /// DAG, task and trigger parameters merged, later ones winning.
    pub params: Params,
    /// The names among `params` whose values came from the fire (a
    /// trigger, a backfill, an event), not the DAG file: untrusted
    /// (`crate::params`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub untrusted_params: std::collections::BTreeSet<String>,
    /// The task.
    pub task: TaskSpec,
    /// The item this instance runs for, when its task is mapped and it is
    /// one of its items; `None` for every other instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_item: Option<crate::map::MapItem>,
}

impl TaskSpec {
    /// Maps a `task` row of `dag`.
    pub fn from_row(dag: &dag::Model, row: &task::Model) -> TaskSpec {
        TaskSpec {
            task_id: row.id,
            name: row.name.clone(),
            task_type: row.task_type,
            content: row.content.clone(),
            params: params_from_json(&row.params),
            priority: row.priority,
            retry: RetryPolicy {
                max: row.retry_max,
                interval_secs: row.retry_interval_secs,
                strategy: row.retry_strategy,
                on_exit_codes: serde_json::from_value(row.retry_on_exit_codes.clone())
                    .unwrap_or_default(),
                on_timeout: row.retry_on_timeout,
                max_interval_secs: row.retry_max_interval_secs,
                jitter_pct: row.retry_jitter_pct,
            },
            timeout_secs: row.timeout_secs,
            wait_timeout_secs: row.wait_timeout_secs,
            queue_timeout_secs: row
                .queue_timeout_secs
                .or(dag.queue_timeout_secs)
                .filter(|secs| *secs > 0),
            queue: row.queue.clone(),
            strategy: row.strategy,
            enabled: row.enabled,
            allow_failure: row.allow_failure,
            outputs: row
                .datasets
                .as_ref()
                .and_then(|declared| serde_json::from_value(declared.clone()).ok())
                .unwrap_or_default(),
            map: row.map_spec(),
        }
    }
}

impl Plan {
    /// Maps a DAG's rows; tasks are ordered by id, edges follow the rows.
    pub fn from_rows(
        dag: &dag::Model,
        tasks: &[task::Model],
        deps: &[task_dependency::Model],
    ) -> Plan {
        let name_of: BTreeMap<i64, &str> = tasks.iter().map(|t| (t.id, t.name.as_str())).collect();
        let mut task_specs: Vec<TaskSpec> =
            tasks.iter().map(|t| TaskSpec::from_row(dag, t)).collect();
        task_specs.sort_by_key(|t| t.task_id);
        let edges = deps
            .iter()
            .filter_map(|d| {
                let child = name_of.get(&d.task_id)?;
                Some(PlanEdge {
                    parent: d.parent_task.clone(),
                    parent_dag: d.parent_dag.clone(),
                    child: (*child).to_owned(),
                    dep_type: d.dep_type,
                    offset_day: d.offset_day,
                    previous_run: d.previous_run,
                })
            })
            .collect();
        Plan {
            dag_id: dag.id,
            dag_name: dag.name.clone(),
            project_id: dag.project_id,
            version: dag.version,
            params: params_from_json(&dag.params),
            tasks: task_specs,
            edges,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(strategy: RetryStrategy) -> RetryPolicy {
        RetryPolicy {
            max: 3,
            interval_secs: 10,
            strategy,
            on_exit_codes: vec![],
            on_timeout: false,
            max_interval_secs: DEFAULT_RETRY_MAX_INTERVAL_SECS,
            jitter_pct: 0,
        }
    }

    #[test]
    fn fixed_and_exponential_backoff() {
        let fixed = policy(RetryStrategy::Fixed);
        assert_eq!(fixed.delay_secs(1, 0.0), 10);
        assert_eq!(fixed.delay_secs(3, 0.0), 10);
        let exponential = policy(RetryStrategy::Exponential);
        let waits: Vec<i64> = (1..=4).map(|n| exponential.delay_secs(n, 0.0)).collect();
        assert_eq!(waits, [10, 20, 40, 80]);
    }

    #[test]
    fn backoff_is_capped() {
        let mut capped = policy(RetryStrategy::Exponential);
        capped.max_interval_secs = 25;
        assert_eq!(capped.delay_secs(2, 0.0), 20);
        assert_eq!(capped.delay_secs(3, 0.0), 25);
        assert_eq!(capped.delay_secs(40, 0.0), 25, "no overflow far out");
        // The default cap is an hour.
        let uncapped = policy(RetryStrategy::Exponential);
        assert_eq!(uncapped.delay_secs(40, 0.0), 3600);
        // A cap below the interval never shortens the interval itself.
        let mut long = policy(RetryStrategy::Fixed);
        long.interval_secs = 7200;
        assert_eq!(long.delay_secs(1, 0.0), 7200);
    }

    #[test]
    fn jitter_stays_within_its_share() {
        let mut jittered = policy(RetryStrategy::Exponential);
        jittered.jitter_pct = 50;
        assert_eq!(
            jittered.delay_secs(3, 0.0),
            40,
            "a zero sample keeps the wait"
        );
        assert_eq!(jittered.delay_secs(3, 0.5), 30);
        assert_eq!(jittered.delay_secs(3, 0.999), 21);
        for _ in 0..1000 {
            let wait = jittered.random_delay_secs(3);
            assert!((20..=40).contains(&wait), "{wait} outside [20, 40]");
        }
        jittered.jitter_pct = 100;
        assert!(jittered.delay_secs(1, 0.999) >= 0);
    }

    #[test]
    fn older_specs_read_with_defaults() {
        let old = r#"{"max":2,"interval_secs":5,"strategy":"FIXED","on_exit_codes":[]}"#;
        let read: RetryPolicy = serde_json::from_str(old).expect("old spec");
        assert!(!read.on_timeout);
        assert_eq!(read.max_interval_secs, DEFAULT_RETRY_MAX_INTERVAL_SECS);
        assert_eq!(read.jitter_pct, 0);
    }
}
