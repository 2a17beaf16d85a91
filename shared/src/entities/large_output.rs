//! `large_output`: the one large value an attempt wrote to
//! `$DJ_OUTPUT_JSON/<name>.json` ([`crate::outputs::LargeOutput`]).

use sea_orm::entity::prelude::*;

/// A task instance's large output, kept apart from its small outputs so
/// that the rows the engine reads and updates on every transition stay
/// small. The last attempt's; a retry's claim removes it.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "large_output")]
pub struct Model {
    /// The task instance that wrote it.
    #[sea_orm(primary_key, auto_increment = false)]
    pub task_instance_id: i64,
    /// Its run, by which a run's rows are removed with it.
    pub dag_run_id: i64,
    /// Its name: a task downstream reads it as `${task.output.<name>}` in
    /// a map's `over`.
    pub name: String,
    /// A JSON array of at most 10,000 items and 1 MiB, as text.
    pub value: String,
    /// When the attempt that wrote it ended.
    pub created_at: DateTimeUtc,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
