//! `dependency_wait`: an instance waiting for a task of another run (an
//! `offset_day` or `other_dag/task` dependency).

use sea_orm::entity::prelude::*;

use crate::kinds::DepType;

/// One unmet cross-run dependency. The row is deleted by the propagation
/// that satisfies it; whoever deletes it (row count 1) updates the waiter.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dependency_wait")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The waiting instance.
    pub waiter_instance_id: i64,
    /// Its run.
    pub waiter_run_id: i64,
    /// The awaited task.
    pub target_task_id: i64,
    /// The awaited run's business date.
    pub target_biz_date: Date,
    /// `STRONG` or `WEAK`.
    pub dep_type: DepType,
    /// What it waits for, for people: `other_dag/task for 2024-01-14`.
    pub description: String,
    /// Row creation.
    pub created_at: DateTimeUtc,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
