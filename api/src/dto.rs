//! The request and response bodies of the API (camelCase JSON, the product's API field names).
//!
//! Requests reject unknown fields. Answers derive `Deserialize` too: the
//! `datajump` CLI reads them with these very types, so the two cannot
//! drift. DAG definitions themselves are not here: they have the DAG
//! file's shape and go through [`crate::definition`].

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use datajump_shared::entities::{dag, dag_run, execution, task_instance};
use datajump_shared::kinds::{OverlapPolicy, ScheduleKind};
use datajump_shared::{RunStatus, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One page of a list.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PageOf{T}")]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Items in the whole list.
    pub total: u64,
    /// 1-based page number.
    pub page: u64,
    /// Items per page.
    pub page_size: u64,
}

impl<T> Page<T> {
    /// Page `page` (1-based) of a list read whole (a list small by nature,
    /// such as a DAG's tasks or the live runners).
    pub fn of_all(all: Vec<T>, page: u64, page_size: u64) -> Page<T> {
        let total = all.len() as u64;
        let skip = usize::try_from((page - 1).saturating_mul(page_size)).unwrap_or(usize::MAX);
        let take = usize::try_from(page_size).unwrap_or(usize::MAX);
        Page {
            items: all.into_iter().skip(skip).take(take).collect(),
            total,
            page,
            page_size,
        }
    }
}

/// `GET /api/v1/dags` query.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DagListQuery {
    /// Project (default 1).
    pub project_id: Option<i64>,
    /// Only DAGs whose name contains this (ignoring case).
    pub search: Option<String>,
    /// 1-based page (default 1).
    pub page: Option<u64>,
    /// Items per page (default 20, at most 500).
    pub page_size: Option<u64>,
}

/// `POST /api/v1/dags` and `PUT /api/v1/dags/{dagId}` query.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyQuery {
    /// Validate the definition and answer what would change, storing
    /// nothing (`dag apply --dry-run`).
    pub dry_run: Option<bool>,
}

/// The answer to a `?dryRun=true` create or update (200): nothing stored.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DryRunResponse {
    /// Always true: the answer of a dry run.
    pub dry_run: bool,
    /// The DAG.
    pub name: String,
    /// What an apply would change (its `version` is the one it would get).
    pub changes: datajump_store::catalog::ApplyReport,
}

/// The query of a list with nothing to filter: `page` and `pageSize`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PageQuery {
    /// 1-based page (default 1).
    pub page: Option<u64>,
    /// Items per page (default 20, at most 500).
    pub page_size: Option<u64>,
}

/// `GET /api/v1/dags/{dagId}/executions` query: task instances by business
/// date and task ("what happened to `load` on 2024-01-02?", the question the data model's index answers).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionsQuery {
    /// Only this business date.
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

/// `GET /api/v1/dags/task-instances/{id}/log` query.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogQuery {
    /// 0-based attempt (default the latest).
    pub attempt: Option<i32>,
}

/// A DAG's headline fields (list items; the detail adds its definition).
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DagSummary {
    /// DAG id.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Project.
    pub project_id: i64,
    /// Responsible person or team.
    pub owner: Option<String>,
    /// Offline DAGs are not fired by schedules.
    pub online: bool,
    /// Bumped on each change.
    pub version: i32,
    /// Runs at once.
    pub max_active_runs: i32,
    /// `skip | wait | parallel`.
    pub overlap: OverlapPolicy,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The file that owns the DAG's definition (edits elsewhere get 409),
    /// or `null` for a DAG made through the API.
    pub source_file: Option<String>,
}

impl From<&dag::Model> for DagSummary {
    fn from(row: &dag::Model) -> DagSummary {
        DagSummary {
            id: row.id,
            name: row.name.clone(),
            description: row.description.clone(),
            project_id: row.project_id,
            owner: row.owner.clone(),
            online: row.online,
            version: row.version,
            max_active_runs: row.max_active_runs,
            overlap: row.overlap_policy,
            created_at: row.created_at,
            updated_at: row.updated_at,
            source_file: row.source_file.clone(),
        }
    }
}

/// A DAG with its definition: `GET /api/v1/dags/{dagId}`, and the answer
/// to creating or changing one.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DagDetail {
    /// The DAG.
    #[serde(flatten)]
    pub dag: DagSummary,
    /// The rest of its definition in the DAG file's shape, camelCase
    /// (`docs/DAG_FORMAT.md`): `tasks`, `schedules`, `params`, timeouts, …
    #[serde(flatten)]
    #[schemars(with = "crate::definition::DefinitionFields")]
    pub definition: Map<String, Value>,
    /// What creating or changing it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<datajump_store::catalog::ApplyReport>,
}

/// A DAG in the list: its headline fields, its latest runs and its
/// schedules, so a list page needs no request per DAG.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DagListItem {
    /// The DAG.
    #[serde(flatten)]
    pub dag: DagSummary,
    /// Its latest runs, newest first (at most [`RECENT_RUNS`]).
    pub recent_runs: Vec<RecentRun>,
    /// Its schedules.
    pub schedules: Vec<ScheduleDto>,
}

/// How many runs a DAG list item carries.
pub const RECENT_RUNS: u64 = 10;

/// A canvas edge: its target depends on its source.
///
/// Node ids may be strings or integers, as canvas libraries send them, and
/// the other fields those libraries put on an edge (`id`, `type`, handles,
/// labels) are ignored: a misspelt `source` or `target` is still an error,
/// as a missing field.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    /// Source node (the parent).
    #[serde(deserialize_with = "node_id")]
    pub source: String,
    /// Target node (the child).
    #[serde(deserialize_with = "node_id")]
    pub target: String,
}

/// A node id: a string, or an integer taken as its decimal text.
fn node_id<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NodeId {
        Text(String),
        Number(i64),
    }
    Ok(
        match NodeId::deserialize(deserializer)
            .map_err(|_| serde::de::Error::custom("a node id is a string or an integer"))?
        {
            NodeId::Text(text) => text,
            NodeId::Number(n) => n.to_string(),
        },
    )
}

/// `POST /api/v1/dags/{dagId}/validate` body.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidateRequest {
    /// The canvas edges; missing or empty is valid.
    #[serde(default)]
    pub edges: Option<Vec<Edge>>,
}

/// `POST /api/v1/dags/{dagId}/validate` answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateResponse {
    /// True when the edges form no cycle.
    pub valid: bool,
    /// What was found, for people.
    pub message: String,
    /// The nodes of a cycle found, in order, the first repeated at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle: Option<Vec<String>>,
}

/// `POST /api/v1/dags/{dagId}/trigger` body.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TriggerRequest {
    /// Run parameters (strings; numbers and booleans are taken as text).
    #[serde(default)]
    pub params: Option<Map<String, Value>>,
    /// Business date (default: the one a fire of the DAG's schedule would have now, under its
    /// zone and offset). The run's logical time is that date's scheduled fire
    /// (docs/PARAMETERS.md "The logical time of a run").
    #[serde(default)]
    pub biz_date: Option<NaiveDate>,
}

/// `POST /api/v1/dags/{dagId}/trigger` answer (202).
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TriggerResponse {
    /// The run's key; its id exists once a resolver has created it.
    pub run_key: String,
    /// The DAG.
    pub dag_id: i64,
    /// Business date of the run.
    pub biz_date: NaiveDate,
    /// Where to follow the run by key.
    pub status_url: String,
    /// The run's id (the API's instance id), when a resolver created it
    /// within a moment of the trigger (it usually takes milliseconds);
    /// absent when none did (no resolver running, or a backlog).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<i64>,
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
    /// Its task instances, in task order.
    pub task_instances: Vec<TaskInstanceDto>,
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
            queued_time: row.queued_at,
            start_time: row.started_at,
            end_time: row.finished_at,
            outputs: row
                .outputs
                .as_ref()
                .map(datajump_shared::params::params_from_json)
                .unwrap_or_default(),
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
            log_path: row.log_path.clone(),
        }
    }
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

/// A DAG's schedule.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleDto {
    /// The DAG.
    pub dag_id: i64,
    /// The schedule.
    pub schedule_id: i64,
    /// Its name within the DAG.
    pub name: String,
    /// `CRON` or `EVENT`.
    pub kind: ScheduleKind,
    /// Cron expression (CRON schedules).
    pub cron_expression: Option<String>,
    /// The expression in words.
    pub cron_description: Option<String>,
    /// Event name (EVENT schedules).
    pub event_name: Option<String>,
    /// The DAG whose successful runs fire it (AFTER schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The datasets whose events fire it (DATA schedules): a dataset name,
    /// `{ "all": [...] }` or `{ "any": [...] }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<datajump_shared::datasets::Condition>,
    /// What a restated partition does (DATA schedules): `ignore` or `rerun`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_update: Option<datajump_shared::datasets::OnUpdate>,
    /// False when paused.
    pub enabled: bool,
    /// The next fire (RFC 3339 in the schedule's zone), when enabled.
    pub next_fire_time: Option<String>,
    /// IANA zone the cron is read in.
    pub timezone: String,
    /// First day it may fire.
    pub start_date: Option<NaiveDate>,
    /// Last day it may fire.
    pub end_date: Option<NaiveDate>,
    /// Missed-fire policy: `none`, `latest` or `all`.
    pub catchup: String,
    /// Most missed fires `catchup: all` makes up.
    pub catchup_limit: i32,
    /// Seconds after which a fire counts as missed.
    pub misfire_grace: i32,
    /// Business date = local fire date + this many days.
    pub biz_date_offset: i32,
    /// Minutes a run it fires may be RUNNING before it is killed and ends
    /// TIMEOUT (the product's `ScheduleConfig.timeout`, in minutes; stored
    /// in seconds, so a file's `timeout: 90` reads 1.5); 0: no limit;
    /// absent: the DAG's `runTimeout` (seconds) applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<serde_json::Value>,
}

/// `PUT /api/v1/dags/{dagId}/schedule` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleUpdate {
    /// Cron expression.
    pub cron_expression: String,
    /// Paused when false (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// IANA zone (default: unchanged, or the API's zone for a new schedule).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// `POST /api/v1/dags/{dagId}/schedule/enable` body (optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleEnable {
    /// A new cron expression; needed when the DAG has no schedule yet.
    #[serde(default)]
    pub cron_expression: Option<String>,
}

/// `POST /api/v1/dags/{dagId}/schedule/disable` body (optional, empty).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleDisable {}

/// A schedule of the `/schedules` collection, as sent: `POST` creates one
/// (`name` and one of `cronExpression` or `eventName` required), `PUT`
/// changes the fields given and keeps the others (the name cannot change).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleBody {
    /// Unique within the DAG.
    #[serde(default)]
    pub name: Option<String>,
    /// Cron expression (replaces an event trigger).
    #[serde(default)]
    pub cron_expression: Option<String>,
    /// Event name: fires on `dj.event.<name>` (replaces a cron expression).
    #[serde(default)]
    pub event_name: Option<String>,
    /// A DAG whose every successful run starts one run of this one, with
    /// its business date (a dependency trigger; replaces the others).
    #[serde(default)]
    pub after: Option<String>,
    /// Paused when false (a new schedule is enabled).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// IANA zone (default the API's zone).
    #[serde(default)]
    pub timezone: Option<String>,
    /// First day it may fire.
    #[serde(default)]
    pub start_date: Option<NaiveDate>,
    /// Last day it may fire.
    #[serde(default)]
    pub end_date: Option<NaiveDate>,
    /// Missed-fire policy: `none`, `latest` or `all`.
    #[serde(default)]
    pub catchup: Option<String>,
    /// Bound for `catchup: all`.
    #[serde(default)]
    pub catchup_limit: Option<i32>,
    /// Seconds after which a fire counts as missed.
    #[serde(default)]
    pub misfire_grace: Option<i32>,
    /// Business date = local fire date + this many days.
    #[serde(default)]
    pub biz_date_offset: Option<i32>,
    /// Minutes a run it fires may be RUNNING (0: no limit), converted to
    /// the seconds the DAG file holds.
    #[serde(default)]
    pub timeout: Option<u32>,
}

impl ScheduleBody {
    /// Whether the body only pauses or resumes the schedule (an operator's
    /// change, allowed on a file-managed DAG).
    pub fn only_enabled(&self) -> bool {
        let ScheduleBody {
            name: _,
            cron_expression,
            event_name,
            after,
            enabled,
            timezone,
            start_date,
            end_date,
            catchup,
            catchup_limit,
            misfire_grace,
            biz_date_offset,
            timeout,
        } = self;
        enabled.is_some()
            && cron_expression.is_none()
            && event_name.is_none()
            && after.is_none()
            && timezone.is_none()
            && start_date.is_none()
            && end_date.is_none()
            && catchup.is_none()
            && catchup_limit.is_none()
            && misfire_grace.is_none()
            && biz_date_offset.is_none()
            && timeout.is_none()
    }
}

/// `POST /api/v1/dags/schedule/validate-cron` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidateCronRequest {
    /// The expression.
    pub cron_expression: String,
    /// IANA zone to compute fire times in (default the API's zone).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Also list this many next fire times (1–100).
    #[serde(default)]
    pub count: Option<u32>,
}

/// `POST /api/v1/dags/schedule/validate-cron` answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateCronResponse {
    /// True when the expression (and zone) are valid.
    pub valid: bool,
    /// The expression in words.
    pub description: Option<String>,
    /// The next fire (RFC 3339 in `timezone`).
    pub next_fire_time: Option<String>,
    /// The next `count` fires, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_fire_times: Option<Vec<String>>,
    /// The zone used.
    pub timezone: String,
    /// Why it is invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What is wrong with a valid expression: it never fires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// `POST /api/v1/events/{name}` answer (202).
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventResponse {
    /// The event name.
    pub event: String,
    /// The subject it was published to.
    pub subject: String,
    /// The stream that stored it.
    pub stream: String,
    /// Its sequence in the stream.
    pub sequence: u64,
    /// The online DAGs with an active schedule on this event: each starts
    /// a run (empty: the event starts nothing).
    pub starts: Vec<String>,
    /// DAGs with an active schedule on this event that are offline, and so
    /// start nothing until they are put online.
    pub offline: Vec<String>,
}

/// A runner, from its heartbeat in `dj_runners`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunnerDto {
    /// Runner id.
    pub id: String,
    /// Queues it serves.
    pub queues: Vec<String>,
    /// Tasks it can run at once.
    pub slots: u64,
    /// Tasks it was running at its last heartbeat.
    pub running: u64,
    /// Its last heartbeat.
    pub last_seen: Option<DateTime<Utc>>,
}

/// A queue: who serves it and what waits in it, from the runners'
/// heartbeats, the work consumers' counters in JetStream and the task
/// instances in the database.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueDto {
    /// Queue name.
    pub queue: String,
    /// Live runners serving it.
    pub runners: u64,
    /// Their slots (a runner serving several queues counts in each).
    pub slots: u64,
    /// Task instances QUEUED on it: released, waiting for a runner.
    pub queued_tasks: u64,
    /// Task instances RUNNING on it.
    pub running_tasks: u64,
    /// Messages per priority band (10 highest, 1 lowest), for the bands
    /// holding any; empty when no runner ever created its consumers.
    pub backlog: Vec<BandBacklog>,
    /// Online DAGs with a task on this queue.
    pub dags: u64,
    /// No live runner serves it: its tasks wait until one starts with
    /// `--queues` naming it.
    pub unserved: bool,
}

/// What one priority band of a queue holds in JetStream.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BandBacklog {
    /// Priority, 1 (lowest) to 10 (highest).
    pub priority: u8,
    /// Messages no runner has taken yet.
    pub pending: u64,
    /// Messages taken and not yet acknowledged (running, or in flight).
    pub ack_pending: u64,
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

/// `POST /api/v1/dags/{dagId}/backfill` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackfillRequest {
    /// First business date (inclusive).
    pub from: NaiveDate,
    /// Last business date (inclusive).
    pub to: NaiveDate,
    /// How many of the DAG's runs may be active while these runs start, in
    /// place of the DAG's `maxActiveRuns`, for these runs only (the DAG is
    /// not changed, and its other runs keep its own limit).
    #[serde(default)]
    pub max_active_runs: Option<i32>,
    /// What becomes of a date that already has a finished run (default
    /// `none`: it is skipped; a date whose run has not finished always is).
    #[serde(default)]
    pub reprocess: Reprocess,
}

/// Which business dates that already ran a backfill runs again, in place
/// (the run keeps its id, as `rerun` does).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Reprocess {
    /// None: a date with a run is skipped.
    #[default]
    None,
    /// Dates whose latest run ended FAILED or KILLED: their failed
    /// tasks and everything below them run again.
    Failed,
    /// Every date whose latest run has finished, whatever its outcome: all
    /// its tasks run again.
    All,
}

/// A run a backfill started.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackfillRun {
    /// Its business date.
    pub biz_date: NaiveDate,
    /// Its run key (a scheduled fire of that date has the same).
    pub run_key: String,
    /// Its logical time.
    pub schedule_time: DateTime<Utc>,
    /// Where to follow it by key.
    pub status_url: String,
    /// The date's existing run, run again in place (`reprocess`), rather
    /// than a new run.
    #[serde(default)]
    pub reprocessed: bool,
}

/// A business date a backfill left alone, and why.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackfillSkip {
    /// The business date.
    pub biz_date: NaiveDate,
    /// Why: it already has a run (manual, scheduled or backfilled), or the
    /// schedule does not fire for it.
    pub reason: String,
    /// The run it already has.
    pub run_id: Option<i64>,
}

/// `POST /api/v1/dags/{dagId}/backfill` answer (202; 200 for a dry run).
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackfillResponse {
    /// The DAG.
    pub dag_id: i64,
    /// Whether nothing was started (`?dryRun=true`): `runs` are those a
    /// backfill would start now.
    #[serde(default)]
    pub dry_run: bool,
    /// The runs started, one per business date, in date order.
    pub runs: Vec<BackfillRun>,
    /// The dates skipped.
    pub skipped: Vec<BackfillSkip>,
}

/// `POST /api/v1/dags/{dagId}/canvas` body: the canvas positions the product's editor saves.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CanvasSave {
    /// The task nodes: tasks as in a DAG definition (camelCase) with
    /// `positionX` and `positionY`; an `id` as loaded is ignored.
    #[schemars(with = "Vec<crate::definition::TaskItem>")]
    pub tasks: Vec<Map<String, Value>>,
    /// The edges between them; missing or empty means none.
    #[serde(default)]
    pub edges: Option<Vec<Edge>>,
}

/// A DAG's canvas: its tasks with their positions, and the edges between them.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Canvas {
    /// The DAG.
    pub dag_id: i64,
    /// The DAG's version.
    pub version: i32,
    /// The tasks, in id order, as `GET /api/v1/dags/{dagId}/tasks` lists
    /// them; their `dependsOn` keeps what an edge cannot say (other DAGs,
    /// other days, WEAK).
    pub tasks: Vec<crate::definition::TaskItem>,
    /// Same-run STRONG dependencies, parent to child.
    pub edges: Vec<Edge>,
}

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

/// A run in a DAG's strip of recent runs.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecentRun {
    /// Run id.
    pub id: i64,
    /// Its state.
    pub status: RunStatus,
    /// Its business date.
    pub biz_date: NaiveDate,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}
