//! The request and response bodies of the grid and Gantt routes ([`super`]);
//! those several route modules share are in [`crate::dto`].

use chrono::{DateTime, NaiveDate, Utc};
use datajump_shared::{RunStatus, TaskStatus};
use serde::{Deserialize, Serialize};

/// `GET /api/v1/dags/{dagId}/grid` query.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GridQuery {
    /// How many runs (latest business date first; default 25, at most 1000).
    pub runs: Option<u64>,
    /// Only runs after this run in that order: the next page.
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
    /// Its mapped tasks whose items were made: their cells hold the map's
    /// state and open its first item.
    pub maps: Vec<GridMap>,
}

/// A mapped task's cell in a run: how many items its list had and how many
/// of those failed so far.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GridMap {
    /// The row (`tasks[row]`) of the mapped task.
    pub row: usize,
    /// Items in its list.
    pub items: i32,
    /// Items that ended without succeeding so far.
    pub failed: i32,
}

/// `GET /api/v1/dags/{dagId}/grid` answer: runs × tasks in one request.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Grid {
    /// The DAG.
    pub dag_id: i64,
    /// Its tasks, parents before children; then tasks it no longer has.
    pub tasks: Vec<GridTask>,
    /// Its runs, latest business date first, and newest first within a
    /// date.
    pub runs: Vec<GridRun>,
    /// Whether earlier runs exist (`?before=` the last run's id).
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

/// What a node of a DAG's graph stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeKind {
    /// A task of this DAG.
    Task,
    /// A task of this DAG in another run: another business date
    /// (`offsetDay`) or the latest earlier run (`previousRun`).
    OtherRun,
    /// A task of another DAG (`dag`, `name`).
    DagTask,
    /// Another DAG whose successful runs start this one (`after:`).
    Dag,
    /// A dataset this DAG writes or waits for.
    Dataset,
}

/// A node of a DAG's graph: one of its tasks, or a stub for what its tasks
/// wait for or write.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GraphNode {
    /// Unique in the graph: a task's name for this DAG's tasks (names hold
    /// no `/`); a stub's id holds a `/` (`dag/orders/load`,
    /// `run/-1/report`, `previous/load`, `after/orders`, `dataset/dw.orders`).
    pub id: String,
    /// What it stands for.
    pub kind: NodeKind,
    /// The task's, DAG's or dataset's name.
    pub name: String,
    /// A task's type (SHELL, SQL, …); `null` for stubs.
    pub task_type: Option<String>,
    /// A task's canvas position, if the canvas saved one.
    pub position_x: Option<i32>,
    /// A task's canvas position, if the canvas saved one.
    pub position_y: Option<i32>,
    /// The other DAG a `DAG_TASK` or `DAG` stub names.
    pub dag: Option<String>,
    /// That DAG's id, when it exists in this DAG's project (a link to it).
    pub dag_id: Option<i64>,
}

/// How an edge's target depends on its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EdgeKind {
    /// Same run; the parent's result matters.
    Strong,
    /// Same run; only that the parent has ended.
    Weak,
    /// This DAG's task in the run `offsetDay` days away.
    CrossRun,
    /// This DAG's task in its latest earlier run.
    PreviousRun,
    /// Another DAG's task (a dependency or a `dag` sensor).
    CrossDag,
    /// Each successful run of the source DAG starts a run of this one; the
    /// edge goes to each task that waits for no other.
    After,
    /// The target waits for the dataset: a data schedule (to each task that
    /// waits for no other) or a `dataset` sensor.
    Reads,
    /// The source task writes the dataset (its `outputs`).
    Writes,
}

/// An edge of a DAG's graph.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GraphEdge {
    /// The node waited for (a dataset: the one written to).
    pub source: String,
    /// The node that waits (a dataset: the one written).
    pub target: String,
    /// How.
    pub kind: EdgeKind,
    /// `true` for a cross-run, previous-run or cross-DAG dependency that
    /// waits only for its parent to end, whatever the result.
    pub weak: bool,
    /// Days between the runs of a cross-run or cross-DAG dependency (0 =
    /// same business date).
    pub offset_day: i32,
}

/// `GET /api/v1/dags/{dagId}/graph` answer: every dependency of the DAG's
/// tasks, with stub nodes for what lies outside the DAG.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Graph {
    /// The DAG.
    pub dag_id: i64,
    /// Its version.
    pub version: i32,
    /// Its tasks in id order, then the stubs.
    pub nodes: Vec<GraphNode>,
    /// Its edges: the tasks' dependencies in order, then `after:` and data
    /// schedules, then what the tasks write.
    pub edges: Vec<GraphEdge>,
}
