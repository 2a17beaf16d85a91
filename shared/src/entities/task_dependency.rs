//! `task_dependency`: an edge from a parent task to a child task.

use sea_orm::entity::prelude::*;

use crate::kinds::DepType;

/// An edge. A parent in the same DAG has `parent_dag` = `None`; one in another
/// DAG is named (`other_dag/task`) and resolved when a run needs it.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "task_dependency")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// DAG of the child.
    pub dag_id: i64,
    /// The waiting task.
    pub task_id: i64,
    /// The parent's id when it is in the same DAG.
    pub parent_task_id: Option<i64>,
    /// DAG name of a parent in another DAG.
    pub parent_dag: Option<String>,
    /// Task name of the parent.
    pub parent_task: String,
    /// `STRONG` or `WEAK`.
    pub dep_type: DepType,
    /// Business-date offset of the awaited run (0 = same run).
    pub offset_day: i32,
    /// The awaited run is the awaited DAG's latest earlier run, whatever
    /// its business date (then `offset_day` is 0).
    pub previous_run: bool,
    /// Row creation.
    pub created_at: DateTimeUtc,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
