//! `secret`: named credentials that HTTP tasks put in headers.

use sea_orm::entity::prelude::*;

/// A secret. `value` is never returned, logged or sent; `Debug` masks it.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "secret")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique name tasks refer to as `${secret:NAME}`.
    #[sea_orm(unique)]
    pub name: String,
    /// The secret itself.
    pub value: String,
    /// What it is for, for people.
    pub description: String,
    /// Row creation.
    pub created_at: DateTimeUtc,
    /// Last change of the value or description.
    pub updated_at: DateTimeUtc,
    /// The project whose tasks may use it.
    pub project_id: i64,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("secret::Model")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("value", &"***")
            .field("description", &self.description)
            .finish()
    }
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
