//! The request and response bodies of the grid and Gantt routes ([`super`]);
//! those several route modules share are in [`crate::dto`].

use chrono::{DateTime, NaiveDate, Utc};
use datajump_shared::{RunStatus, TaskStatus};
use serde::{Deserialize, Serialize};

/// `GET /api/v1/dags/{dagId}/grid` query.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GridQuery {
    /// How many runs (newest first; default 25, at most 1000).
    pub runs: Option<u64>,
    /// Only runs older than this run id: the next page.
    pub before: Option<i64>,
}

/// A row of the grid: one of the DAG's tasks.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GridTask {
    /// Task id, or `null` for a task the DAG no longer has that shown runs
    /// ran.
    pub id: Option<i64>,
    /// Its name.
    pub name: String,
    /// SHELL, PYTHON, SQL, HTTP, …; `null` for a removed task.
    pub task_type: Option<String>,
    /// The tasks of the same run it waits for.
    pub upstream: Vec<String>,
}

/// A cell of the grid: `[taskInstanceId, status, attempts]`.
pub type GridCell = (i64, TaskStatus, i32);

/// A column of the grid: one run, with a cell per task.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GridRun {
    /// Run id.
    pub id: i64,
    /// Its run key.
    pub run_key: String,
    /// Its business date.
    pub biz_date: NaiveDate,
    /// Its state.
    pub status: RunStatus,
    /// What started it.
    pub trigger_type: String,
    /// The DAG version it runs.
    pub dag_version: i32,
    /// When it was created.
    pub start_time: DateTime<Utc>,
    /// When it finished.
    pub end_time: Option<DateTime<Utc>>,
    /// `cells[i]` is its instance of `tasks[i]`, or `null` when it has none.
    pub cells: Vec<Option<GridCell>>,
}

/// `GET /api/v1/dags/{dagId}/grid` answer: runs × tasks in one request.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Grid {
    /// The DAG.
    pub dag_id: i64,
    /// Its tasks, parents before children; then tasks it no longer has.
    pub tasks: Vec<GridTask>,
    /// Its runs, newest first.
    pub runs: Vec<GridRun>,
    /// Whether older runs exist (`?before=` the last run's id).
    pub has_more: bool,
}

/// One attempt of a task instance, a bar of a run's Gantt chart.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GanttBar {
    /// Its task instance.
    pub task_instance_id: i64,
    /// Its task's name.
    pub task_name: String,
    /// The attempt (0 first).
    pub attempt: i32,
    /// How it ended, or RUNNING.
    pub status: TaskStatus,
    /// The runner that ran it.
    pub worker_id: String,
    /// When it started.
    pub start_time: DateTime<Utc>,
    /// When it ended; `null` while it runs.
    pub end_time: Option<DateTime<Utc>>,
}

/// `GET /api/v1/dags/instances/{instanceId}/gantt` answer.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Gantt {
    /// The run.
    pub run_id: i64,
    /// When it was created.
    pub start_time: DateTime<Utc>,
    /// When it finished.
    pub end_time: Option<DateTime<Utc>>,
    /// Every attempt of its task instances, by start.
    pub attempts: Vec<GanttBar>,
}
