//! `api_token`: a named API token with a role. Only the token's SHA-256
//! is stored; the token itself is shown once, when it is created.

use sea_orm::entity::prelude::*;

use crate::access::Role;

/// A token.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_token")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique name, for people and the audit log.
    #[sea_orm(unique)]
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// Lower-case hex SHA-256 of the token.
    #[sea_orm(unique)]
    pub token_hash: String,
    /// Who created it (a token's name, or `os:<user>` from the CLI).
    pub created_by: String,
    /// Row creation.
    pub created_at: DateTimeUtc,
    /// When it was last used (updated at most once a minute).
    pub last_used_at: Option<DateTimeUtc>,
    /// The one project it is limited to; `None`: every project.
    pub project_id: Option<i64>,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
