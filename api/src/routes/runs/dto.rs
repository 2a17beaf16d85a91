//! The request and response bodies of the run and task instance routes: runs,
//! task instances and their attempts, kills, reruns, clears and marks
//! ([`super`]); those several route modules share are in [`crate::dto`].

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use datajump_shared::entities::{StoredJson, dag_run, execution, task_instance};
use datajump_shared::problem::Problem;
use datajump_shared::{RunStatus, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `GET /api/v1/dags/{dagId}/executions` query: task instances by business
/// date and task ("what happened to `load` on 2024-01-02?", the question the data model's index answers).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionsQuery {
    /// Only this business date (0001-01-01 to 9999-12-31).
    #[serde(
        default,
        deserialize_with = "datajump_shared::biz_date::deserialize_optional"
    )]
    pub biz_date: Option<NaiveDate>,
    /// Only the task with this name.
    pub task: Option<String>,
    /// Only instances in this status (`FAILED`, `SUCCESS`, …).
    pub status: Option<TaskStatus>,
    /// 1-based page (default 1).
    pub page: Option<u64>,
    /// Items per page (default 20, at most 500).
    pub page_size: Option<u64>,
}

/// `GET /api/v1/dags/{dagId}/instances` query.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstancesQuery {
    /// Runs per page, newest first (default 20, at most 500).
    pub limit: Option<u64>,
    /// 1-based page (default 1).
    pub page: Option<u64>,
}

/// A DAG run (the product's API calls it a DAG instance).
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunDto {
    /// Run id (instance id).
    pub id: i64,
    /// The DAG.
    pub dag_id: i64,
    /// DAG version its plan was taken from.
    pub dag_version: i32,
    /// Unique run key (`manual:<uuid>`, `sched:<schedule>:<unix>`, …).
    pub run_key: String,
    /// The schedule that fired it.
    pub schedule_id: Option<i64>,
    /// SCHEDULE, MANUAL, BACKFILL or EVENT.
    pub trigger_type: String,
    /// Business date.
    pub biz_date: NaiveDate,
    /// Scheduled (or trigger) instant.
    pub schedule_time: DateTime<Utc>,
    /// QUEUED, RUNNING, SUCCESS, FAILED or KILLED.
    pub status: RunStatus,
    /// Run parameters.
    pub run_params: Value,
    /// Creation time.
    pub start_time: DateTime<Utc>,
    /// When it finished.
    pub end_time: Option<DateTime<Utc>>,
}

impl From<&dag_run::Model> for RunDto {
    fn from(row: &dag_run::Model) -> RunDto {
        RunDto {
            id: row.id,
            dag_id: row.dag_id,
            dag_version: row.dag_version,
            run_key: row.dedup_key.clone(),
            schedule_id: row.schedule_id,
            trigger_type: row.trigger_type.as_str().to_owned(),
            biz_date: row.biz_date,
            schedule_time: row.logical_time,
            status: row.status,
            run_params: row.params.clone(),
            start_time: row.created_at,
            end_time: row.finished_at,
        }
    }
}

/// A run with its task instances.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunDetail {
    /// The run.
    #[serde(flatten)]
    pub run: RunDto,
    /// Its task instances, in task order; a mapped task's are its items,
    /// by index.
    pub task_instances: Vec<TaskInstanceDto>,
    /// The tasks that failed without failing the run (`allow_failure`).
    pub allowed_failures: Vec<String>,
    /// Each mapped task whose list was read: how its items stand, and how
    /// it ended for its children (docs/DAG_FORMAT.md, "Map").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mapped_tasks: Vec<MappedTaskDto>,
}

/// A mapped task in a run, as its children see it: one task whose items
/// are listed among the run's task instances.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MappedTaskDto {
    /// The task definition.
    pub task_id: i64,
    /// Task name.
    pub task_name: String,
    /// RUNNING while items are left; SUCCESS when every item succeeded,
    /// FAILED when any failed; KILLED with its run.
    pub status: TaskStatus,
    /// Items in its list.
    pub items: i32,
    /// Items ended.
    pub ended: i32,
    /// Items that ended without succeeding.
    pub failed: i32,
    /// Why it failed.
    pub error_message: Option<String>,
    /// The code and values of `errorMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_problem: Option<Problem>,
    /// When its list was read and its items made.
    pub start_time: Option<DateTime<Utc>>,
    /// When its last item ended.
    pub end_time: Option<DateTime<Utc>>,
}

impl MappedTaskDto {
    /// The answer for `row`, if it is a mapped task whose items were made.
    pub fn of(row: &task_instance::Model) -> Option<MappedTaskDto> {
        Some(MappedTaskDto {
            task_id: row.task_id,
            task_name: row.task_name.clone(),
            status: row.status,
            items: row.map_items.filter(|_| row.is_expanded_map())?,
            ended: row.map_ended,
            failed: row.map_failed,
            error_message: row.reason.clone(),
            error_problem: readable(row.reason_problem.as_ref()),
            start_time: row.started_at,
            end_time: row.finished_at,
        })
    }
}

/// `GET /api/v1/dags/instances/{id}/status` answer.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStatusDto {
    /// Run id.
    pub id: i64,
    /// Run key.
    pub run_key: String,
    /// Run status.
    pub status: RunStatus,
    /// True once the status is final.
    pub finished: bool,
    /// Task instances by status.
    pub task_counts: BTreeMap<String, u64>,
    /// Creation time.
    pub start_time: DateTime<Utc>,
    /// When it finished.
    pub end_time: Option<DateTime<Utc>>,
}

/// A task instance: one task in one run.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskInstanceDto {
    /// Task instance id.
    pub id: i64,
    /// The run (the API's "dag instance").
    pub dag_instance_id: i64,
    /// The DAG.
    pub dag_id: i64,
    /// The task definition.
    pub task_id: i64,
    /// Task name.
    pub task_name: String,
    /// Business date.
    pub biz_date: NaiveDate,
    /// What started the run.
    pub trigger_type: String,
    /// Status.
    pub status: TaskStatus,
    /// Attempts started.
    pub attempts: i32,
    /// Retries used of the task's budget.
    pub retry_count: i32,
    /// Runner of the current attempt.
    pub worker_id: Option<String>,
    /// Queue.
    pub queue: String,
    /// 1–10.
    pub priority: i32,
    /// Retry time while UP_FOR_RETRY.
    pub retry_at: Option<DateTime<Utc>>,
    /// A sensor's checks so far in its attempt (0 for other tasks).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub checks: i32,
    /// A sensor's next check while UP_FOR_RESCHEDULE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_check_at: Option<DateTime<Utc>>,
    /// Why it failed or was skipped.
    pub error_message: Option<String>,
    /// The code and values of `errorMessage`, when it has them: a UI says
    /// it in its reader's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_problem: Option<Problem>,
    /// When it was queued last.
    pub queued_time: Option<DateTime<Utc>>,
    /// When its current attempt started.
    pub start_time: Option<DateTime<Utc>>,
    /// When it reached its final state.
    pub end_time: Option<DateTime<Utc>>,
    /// What its last attempt declared (`##dj-output name=value`): the
    /// values tasks after it read as `${task.output.name}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, String>,
    /// SKIPPED by control flow (its strategy skipped it), not because it is
    /// disabled: its children count it as skipped, not succeeded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flow_skipped: bool,
    /// It failed, and its task allows that: the run does not fail for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failure_allowed: bool,
    /// An item of a mapped task: its 0-based index in the list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_index: Option<i32>,
    /// An item of a mapped task: its value, as `$DJ_MAP_ITEM` holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_item: Option<String>,
}

impl From<&task_instance::Model> for TaskInstanceDto {
    fn from(row: &task_instance::Model) -> TaskInstanceDto {
        TaskInstanceDto {
            id: row.id,
            dag_instance_id: row.dag_run_id,
            dag_id: row.dag_id,
            task_id: row.task_id,
            task_name: row.task_name.clone(),
            biz_date: row.biz_date,
            trigger_type: row.trigger_type.as_str().to_owned(),
            status: row.status,
            attempts: row.attempt,
            retry_count: row.retries_used,
            worker_id: row.owner.clone(),
            queue: row.queue.clone(),
            priority: row.priority,
            retry_at: (row.status == TaskStatus::UpForRetry)
                .then_some(row.deadline_at)
                .flatten(),
            checks: row.pokes,
            next_check_at: (row.status == TaskStatus::UpForReschedule)
                .then_some(row.deadline_at)
                .flatten(),
            error_message: row.reason.clone(),
            error_problem: readable(row.reason_problem.as_ref()),
            queued_time: row.queued_at,
            start_time: row.started_at,
            end_time: row.finished_at,
            outputs: row
                .outputs
                .as_ref()
                .and_then(|outputs| outputs.read().ok())
                .cloned()
                .unwrap_or_default(),
            flow_skipped: row.status == TaskStatus::Skipped && row.flow_skipped,
            failure_allowed: row.failed_allowed(),
            map_index: row.is_map_item().then_some(row.map_index),
            map_item: row
                .is_map_item()
                .then(|| {
                    row.spec
                        .read()
                        .ok()?
                        .map_item
                        .as_ref()
                        .map(|item| item.value.as_param())
                })
                .flatten(),
        }
    }
}

/// A task instance with its attempts.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskInstanceDetail {
    /// The instance.
    #[serde(flatten)]
    pub instance: TaskInstanceDto,
    /// Its executions, one per attempt, oldest first.
    pub executions: Vec<ExecutionDto>,
}

/// One attempt of a task instance.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionDto {
    /// Execution id.
    pub id: i64,
    /// 0-based attempt.
    pub attempt: i32,
    /// RUNNING, then the attempt's outcome.
    pub status: TaskStatus,
    /// What started this attempt.
    pub trigger_type: String,
    /// Runner id.
    pub worker_id: String,
    /// Start.
    pub start_time: DateTime<Utc>,
    /// End.
    pub end_time: Option<DateTime<Utc>>,
    /// End − start.
    pub duration_ms: Option<i64>,
    /// Process exit code.
    pub exit_code: Option<i32>,
    /// Why it failed.
    pub error_message: Option<String>,
    /// The code and values of `errorMessage`, when it has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_problem: Option<Problem>,
    /// Object-store name of the full log.
    pub log_path: Option<String>,
}

impl From<&execution::Model> for ExecutionDto {
    fn from(row: &execution::Model) -> ExecutionDto {
        ExecutionDto {
            id: row.id,
            attempt: row.attempt,
            status: row.status,
            trigger_type: row.trigger_type.as_str().to_owned(),
            worker_id: row.worker.clone(),
            start_time: row.start_time,
            end_time: row.end_time,
            duration_ms: row.duration_ms,
            exit_code: row.exit_code,
            error_message: row.error_msg.clone(),
            error_problem: readable(row.error_problem.as_ref()),
            log_path: row.log_path.clone(),
        }
    }
}

/// A stored problem, or none when it does not read: its English words are
/// stored beside it and still say it.
fn readable(stored: Option<&StoredJson<Problem>>) -> Option<Problem> {
    stored.and_then(|problem| problem.read().ok()).cloned()
}

/// What a kill did.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KillResponse {
    /// The task instance or run.
    pub id: i64,
    /// Its status now (KILLED).
    pub status: String,
    /// Task instances killed.
    pub killed_task_instances: Vec<i64>,
}

/// `POST /api/v1/dags/instances/{instanceId}/rerun` body (optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RerunRequest {
    /// Only FAILED, TIMEOUT, KILLED and UPSTREAM_FAILED tasks and their
    /// downstream (default: every task).
    #[serde(default)]
    pub failed_only: bool,
}

/// `POST /api/v1/dags/instances/{instanceId}/rerun` answer.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RerunResponse {
    /// The run, rerun in place (same id, same business date).
    pub id: i64,
    /// Its status now (RUNNING).
    pub status: RunStatus,
    /// Whether only failed tasks were rerun.
    pub failed_only: bool,
    /// Task instances queued at once (the others wait for their parents).
    pub queued_task_instances: Vec<TaskInstanceDto>,
}

/// `POST /api/v1/task-instances/{taskInstanceId}/clear` body (optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClearRequest {
    /// Also clear every task downstream of it (default: only this one).
    #[serde(default)]
    pub downstream: bool,
}

/// `POST /api/v1/task-instances/{taskInstanceId}/mark` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MarkRequest {
    /// `SUCCESS` or `FAILED`.
    pub status: TaskStatus,
}

/// What a clear or a mark of a task instance did.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskResetResponse {
    /// The task instance.
    pub id: i64,
    /// Its run.
    pub dag_instance_id: i64,
    /// Its status now.
    pub status: TaskStatus,
    /// Task instances queued at once (the others wait for their parents).
    pub queued_task_instances: Vec<TaskInstanceDto>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}
