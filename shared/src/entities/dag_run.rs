//! `dag_run`: one run of a DAG.

use sea_orm::entity::prelude::*;

use crate::{RunStatus, TriggerType};

/// A run. `dedup_key` is unique, so a repeated fire creates nothing. Its
/// plan is its DAG's at `dag_version` ([`super::dag_version_plan`]).
///
/// Invariant: `pending_instances` counts the run's instances not yet
/// propagated; the propagation that takes it to zero finishes the run, and
/// `failed_instances` (propagated instances that did not succeed) decides how.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dag_run")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The DAG.
    pub dag_id: i64,
    /// DAG version the plan was taken from.
    pub dag_version: i32,
    /// The schedule that fired it, if any.
    pub schedule_id: Option<i64>,
    /// `sched:<schedule_id>:<fire_unix>`, `event:<schedule_id>:<seq>`,
    /// `after:<schedule_id>:<upstream_run_id>` or `manual:<uuid>`.
    #[sea_orm(unique)]
    pub dedup_key: String,
    /// What started it.
    pub trigger_type: TriggerType,
    /// Business date of the data it processes.
    pub biz_date: Date,
    /// Scheduled instant (trigger instant for manual runs).
    pub logical_time: DateTimeUtc,
    /// Run parameters given by the trigger.
    pub params: Json,
    /// Run status.
    pub status: RunStatus,
    /// Instances not yet propagated.
    pub pending_instances: i32,
    /// Propagated instances that did not end SUCCESS or SKIPPED.
    pub failed_instances: i32,
    /// Row creation.
    pub created_at: DateTimeUtc,
    /// When it finished.
    pub finished_at: Option<DateTimeUtc>,
    /// Its own limit of the DAG's active runs, in place of the DAG's
    /// `max_active_runs` (a backfill's `--max-active-runs`); `None` for
    /// the DAG's.
    pub max_active_runs: Option<i32>,
    /// Seconds it may be RUNNING before it is killed and ends TIMEOUT
    /// (its schedule's `timeout`, else its DAG's `run_timeout`); `None`:
    /// no limit.
    pub timeout_secs: Option<i32>,
    /// When that bound falls: set each time it starts RUNNING (created
    /// running, given a slot, reopened), so a wait for a slot is not counted.
    pub timeout_at: Option<DateTimeUtc>,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
