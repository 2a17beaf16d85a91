//! `api_session`: a browser's sign-in, made by exchanging an API token for
//! an HttpOnly cookie. Only the SHA-256 of the cookie's value is stored.

use sea_orm::entity::prelude::*;

use crate::access::Role;

/// A session.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_session")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Lower-case hex SHA-256 of the cookie's value.
    #[sea_orm(unique)]
    pub session_hash: String,
    /// The named token signed in with; `None` for `DATAJUMP_API_TOKEN`.
    /// Revoking the token ends its sessions.
    pub token_id: Option<i64>,
    /// The token's name, for the audit log.
    pub name: String,
    /// The token's role.
    pub role: Role,
    /// Sign-in time.
    pub created_at: DateTimeUtc,
    /// When the cookie stops working.
    pub expires_at: DateTimeUtc,
    /// The token's project, if it is limited to one.
    pub project_id: Option<i64>,
    /// Lower-case hex SHA-256 of `DATAJUMP_API_TOKEN` when the session
    /// signed in with it: once that token is replaced, the session ends.
    pub env_token_hash: Option<String>,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
