//! `project`: a group of DAGs with the secrets and datasources their tasks
//! may use, and the boundary a token can be limited to.

use sea_orm::entity::prelude::*;

/// One project.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "project")]
pub struct Model {
    /// Its id: the `projectId` of the API and the `project` of a DAG file.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i64,
    /// Unique.
    #[sea_orm(unique)]
    pub name: String,
    /// What it is for.
    pub description: String,
    /// When it was created.
    pub created_at: DateTimeUtc,
}

/// No relations are declared; queries join by id.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
