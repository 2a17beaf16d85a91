//! The request and response bodies of the live stream routes: the events
//! `/api/v1/stream` and a log stream send ([`super`]); those several route
//! modules share are in [`crate::dto`].

use chrono::{DateTime, NaiveDate, Utc};
use datajump_shared::{RunStatus, TaskStatus};
use serde::{Deserialize, Serialize};

/// `event: task` of the live stream (`GET /api/v1/stream`): a task
/// instance whose state changed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskChange {
    /// Task instance id.
    pub id: i64,
    /// Its run.
    pub run_id: i64,
    /// Its DAG.
    pub dag_id: i64,
    /// Its task.
    pub task_id: i64,
    /// Its task's name.
    pub task_name: String,
    /// Its state now.
    pub status: TaskStatus,
    /// Attempts claimed so far.
    pub attempts: i32,
    /// When its latest attempt started.
    pub start_time: Option<DateTime<Utc>>,
    /// When it ended.
    pub end_time: Option<DateTime<Utc>>,
    /// SKIPPED by control flow, not because it is disabled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flow_skipped: bool,
    /// An item of a mapped task: its index in the list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_index: Option<i32>,
    /// A mapped task whose items were made: its state is the map's (the
    /// run's `mappedTasks`), and its items are the run's task instances.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mapped: bool,
}

/// `event: run` of the live stream: a run that started or whose state
/// changed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunChange {
    /// Run id.
    pub id: i64,
    /// Its DAG.
    pub dag_id: i64,
    /// The DAG version it runs.
    pub dag_version: i32,
    /// Its state now.
    pub status: RunStatus,
    /// Its business date.
    pub biz_date: NaiveDate,
    /// Its run key.
    pub run_key: String,
    /// What started it.
    pub trigger_type: String,
    /// When it was created.
    pub start_time: DateTime<Utc>,
    /// When it finished.
    pub end_time: Option<DateTime<Utc>>,
}

/// `event: end` of a log stream: the attempt ended.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogEnd {
    /// How it ended (the task instance's state after it).
    pub status: TaskStatus,
    /// The attempt (0 first).
    pub attempt: i32,
}
