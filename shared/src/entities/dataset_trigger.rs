//! `dataset_trigger`: a data schedule's condition was met.

use sea_orm::entity::prelude::*;

/// One fire of a data schedule, decided in the transaction that recorded
/// the event completing its condition. The largest `event_id` of a
/// schedule's rows is how far it has consumed unpartitioned datasets; a
/// row whose run does not exist is a fire lost before its publish.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dataset_trigger")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The schedule fired.
    pub schedule_id: i64,
    /// The run key of the fire: one run however often it is sent.
    #[sea_orm(unique)]
    pub dedup_key: String,
    /// The partition it fired for, `None` for an unpartitioned condition.
    pub partition: Option<String>,
    /// The event that completed the condition.
    pub event_id: i64,
    /// The business date of the run it starts.
    pub biz_date: Date,
    /// When the condition was met.
    pub created_at: DateTimeUtc,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
