//! The request and response bodies of the DAG routes: list and apply queries, a
//! DAG as listed and in detail, edge validation, triggers and backfills
//! ([`super`]); those several route modules share are in [`crate::dto`].

use chrono::{DateTime, NaiveDate, Utc};
use datajump_shared::RunStatus;
use datajump_shared::entities::dag;
use datajump_shared::kinds::OverlapPolicy;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dto::{Edge, ScheduleDto};

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
    /// The priority its fires go out by (1-10, 10 first): its `priority`,
    /// else the highest of its root tasks.
    pub fire_priority: i32,
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
            fire_priority: row.fire_priority,
            created_at: row.created_at,
            updated_at: row.updated_at,
            source_file: row.source_file.clone(),
        }
    }
}

/// A DAG with its definition: `GET /api/v1/dags/{dagId}`, and the answer
/// to creating or changing one.
// Written straight from the stored rows, so never read back into this
// type: clients read it as JSON.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DagDetail {
    /// The DAG.
    #[serde(flatten)]
    pub dag: DagSummary,
    /// The rest of its definition in the DAG file's shape, camelCase
    /// (`docs/DAG_FORMAT.md`): `tasks`, `schedules`, `params`, timeouts, …
    #[serde(flatten)]
    #[schemars(with = "crate::definition::DefinitionFields")]
    pub definition: crate::definition::StoredDefinition,
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

/// `POST /api/v1/dags/{dagId}/validate` body.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidateRequest {
    /// The canvas edges; missing or empty is valid.
    #[serde(default)]
    pub edges: Option<Vec<Edge>>,
}

/// `POST /api/v1/dags/validate-condition` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidateConditionRequest {
    /// A SWITCH case's `when`, in CEL.
    pub condition: String,
}

/// `POST /api/v1/dags/validate-condition` answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateConditionResponse {
    /// True when it compiles and reads only what a condition may.
    pub valid: bool,
    /// What it reads (`tasks.load.output.rows`, `params.region`,
    /// `biz_date`), when valid. Whether each task read runs before the
    /// SWITCH is checked when the DAG is saved.
    pub reads: Vec<String>,
    /// Why it is invalid, with its position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
    /// (docs/PARAMETERS.md "The logical time of a run"). From 0001-01-01
    /// to 9999-12-31, the dates DataJump stores.
    #[serde(
        default,
        deserialize_with = "datajump_shared::biz_date::deserialize_optional"
    )]
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

/// `POST /api/v1/dags/{dagId}/backfill` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackfillRequest {
    /// First business date (inclusive), from 0001-01-01.
    #[serde(deserialize_with = "datajump_shared::biz_date::deserialize")]
    pub from: NaiveDate,
    /// Last business date (inclusive), up to 9999-12-31.
    #[serde(deserialize_with = "datajump_shared::biz_date::deserialize")]
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
