//! `dag`: a named DAG definition.

use sea_orm::entity::prelude::*;

use crate::kinds::OverlapPolicy;

/// A DAG. `version` is bumped on each change; runs keep their own snapshot.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dag")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique name; the handle users apply, trigger and list by.
    #[sea_orm(unique)]
    pub name: String,
    /// Free text.
    pub description: String,
    /// Project it belongs to (default 1).
    pub project_id: i64,
    /// Responsible person or team.
    pub owner: Option<String>,
    /// Offline DAGs are not fired by schedules.
    pub online: bool,
    /// Bumped on each change.
    pub version: i32,
    /// DAG-level parameters (object of strings).
    pub params: Json,
    /// At most this many runs active at once.
    pub max_active_runs: i32,
    /// `skip | wait | parallel`: what a fire does when `max_active_runs` is reached.
    pub overlap_policy: OverlapPolicy,
    /// Fire priority as the file says it (1-10); `None`: not said.
    pub priority: Option<i32>,
    /// The priority its fires go out by: `priority`, else the highest of
    /// its root tasks (`DagFile::fire_priority`), kept at each apply.
    pub fire_priority: i32,
    /// Alert targets and conditions.
    pub alert_config: Option<Json>,
    /// Seconds a task may wait QUEUED for a runner before it ends TIMEOUT,
    /// for tasks that set no `queue_timeout` of their own; `None`: no limit.
    pub queue_timeout_secs: Option<i32>,
    /// Seconds a run may be RUNNING before it is killed and ends TIMEOUT,
    /// for runs of a schedule without its own `timeout`; `None`: no limit.
    pub run_timeout_secs: Option<i32>,
    /// Row creation.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
    /// The file the DAG was applied from (`dag apply -f`, `up`'s folder):
    /// its definition is then the file's, and edits elsewhere are refused.
    /// `None` for a DAG made through the API.
    pub source_file: Option<String>,
    /// What that file last said about `online`: a re-apply changes
    /// `online` only when the file's own line changed, so an operator's
    /// online/offline survives restarts.
    pub file_online: Option<bool>,
}

/// No declared relations: joins are written where they are needed.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
