//! `dag_version_plan`: the tasks and edges of one version of a DAG, written
//! by the first run created from that version and kept for audit: a run's
//! plan is its DAG's at `dag_run.dag_version`. Once per version, not per
//! run, because every version's runs share it, and a copy per run was a
//! large part of what creating a run wrote.

use sea_orm::entity::prelude::*;

use super::stored_json::StoredJson;
use crate::plan::Plan;

/// One version's plan.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dag_version_plan")]
pub struct Model {
    /// The DAG (`dag.id`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub dag_id: i64,
    /// Its version (`dag.version`, `dag_run.dag_version`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub version: i32,
    /// Its tasks and edges.
    pub plan: StoredJson<Plan>,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
