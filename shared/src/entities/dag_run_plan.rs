//! `dag_run_plan`: the snapshot of a DAG's tasks and edges a run was created
//! from, written once with the run and kept for audit. Apart from `dag_run`
//! because that row's counters change on every completion, and updating a
//! row rewrites all of it.

use sea_orm::entity::prelude::*;

use super::stored_json::StoredJson;
use crate::plan::Plan;

/// A run's plan snapshot.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dag_run_plan")]
pub struct Model {
    /// The run (`dag_run.id`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub dag_run_id: i64,
    /// Its tasks and edges.
    pub plan: StoredJson<Plan>,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
