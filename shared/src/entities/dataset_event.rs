//! `dataset_event`: a dataset, or one partition of it, was written.

use sea_orm::entity::prelude::*;

use crate::datasets::EventSource;

/// One announcement that data was written: by a task's success (in the
/// transaction that records it) or through the API. Never updated.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dataset_event")]
pub struct Model {
    /// Primary key; later events have larger ids.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The project whose dataset it is.
    pub project_id: i64,
    /// The dataset (`dw.orders`).
    pub dataset: String,
    /// The partition written, `None` for an unpartitioned dataset.
    pub partition: Option<String>,
    /// Who announced it.
    pub source: EventSource,
    /// The run whose task wrote it (source TASK).
    pub dag_run_id: Option<i64>,
    /// The task instance that wrote it (source TASK).
    pub task_instance_id: Option<i64>,
    /// Small facts about what was written: a task's declared outputs, or
    /// what an announcement gave.
    pub metadata: Option<Json>,
    /// Where an announcement came from, unique: `nats:<stream sequence>`
    /// for one published on `dj.dataset.<name>`, so a redelivery records
    /// nothing new.
    #[sea_orm(unique)]
    pub origin: Option<String>,
    /// When it was recorded.
    pub created_at: DateTimeUtc,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
