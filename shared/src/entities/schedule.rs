//! `schedule`: when a DAG runs. A DAG may have several.

use sea_orm::entity::prelude::*;

use crate::kinds::{Catchup, ScheduleKind};

/// A cron, event or dependency (`AFTER`) schedule of a DAG. `(dag_id, name)` is unique.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "schedule")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The DAG it fires.
    pub dag_id: i64,
    /// Unique within the DAG.
    pub name: String,
    /// What starts its runs.
    pub kind: ScheduleKind,
    /// Cron expression (for `CRON`).
    pub cron_expr: Option<String>,
    /// Event name (for `EVENT`).
    pub event_name: Option<String>,
    /// The DAG whose successful runs fire it (for `AFTER`), by name.
    pub after_dag: Option<String>,
    /// IANA time zone the cron is read in.
    pub timezone: String,
    /// First day it may fire (in its zone).
    pub start_date: Option<Date>,
    /// Last day it may fire (in its zone).
    pub end_date: Option<Date>,
    /// Paused schedules do not fire.
    pub active: bool,
    /// `none | latest | all` for fires missed while no ticker ran.
    pub catchup: Catchup,
    /// At most this many missed fires are replayed under `all`.
    pub catchup_limit: i32,
    /// A fire later than this many seconds counts as missed.
    pub misfire_grace_secs: i32,
    /// Seconds a run it fires may be RUNNING; `None`: the DAG's `run_timeout`.
    pub timeout_secs: Option<i32>,
    /// Days added to the fire's local date to get the business date.
    pub biz_date_offset_days: i32,
    /// Row creation.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
    /// What the DAG's file last said about `active` (as
    /// `dag.file_online`); `None` unless the DAG is file-managed.
    pub file_active: Option<bool>,
    /// What it waits for (for `DATA`): a [`crate::datasets::Condition`].
    pub data_condition: Option<Json>,
    /// What a restated partition does (for `DATA`).
    pub on_update: Option<crate::datasets::OnUpdate>,
    /// When it last began to fire: made active, resumed, its DAG put
    /// online, or given another upstream or condition (docs/DAG_FORMAT.md
    /// "Dependency triggers"). `None` only in a row the migration did not
    /// backfill: read as `updated_at` ([`Model::counts_from`]).
    pub active_since: Option<DateTimeUtc>,
}

impl Model {
    /// What the schedule may fire for: an `after:` schedule owes no run to
    /// an upstream run that ended before this moment, nor a data schedule
    /// to an event recorded before it, so a new or resumed schedule does
    /// not fire for what happened while it did not exist or was paused.
    pub fn counts_from(&self) -> DateTimeUtc {
        self.active_since.unwrap_or(self.updated_at)
    }

    /// A data schedule's condition (validated when its DAG was applied);
    /// `None` for other schedules, or a stored value that does not read.
    pub fn condition(&self) -> Option<crate::datasets::Condition> {
        serde_json::from_value(self.data_condition.clone()?).ok()
    }
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
