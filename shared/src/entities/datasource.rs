//! `datasource`: connection settings for SQL tasks.

use sea_orm::entity::prelude::*;

use crate::kinds::DatasourceKind;

/// A datasource. `password` is a secret: never returned, logged or sent.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "datasource")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique name tasks refer to.
    #[sea_orm(unique)]
    pub name: String,
    /// The database product.
    pub kind: DatasourceKind,
    /// Host (or file path for SQLite).
    pub host: String,
    /// Port.
    pub port: Option<i32>,
    /// Database name.
    pub database: Option<String>,
    /// User name.
    pub username: Option<String>,
    /// Secret.
    pub password: Option<String>,
    /// Extra connection parameters.
    pub params: Json,
    /// Row creation.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
    /// The project whose tasks may use it.
    pub project_id: i64,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("datasource::Model")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("database", &self.database)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
